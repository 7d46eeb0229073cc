import FoundationEssentials
@_spi(FixedExpiryValidationTime) @_spi(DisableValidityCheck) import X509

/// Builds and validates one certificate path with swift-certificates' `Verifier`: RFC 5280 at a
/// chosen time plus an optional policy of the caller's (the FIDO rules of an attestation format).
/// Attestation paths and the metadata BLOB's signing chain both go through here, so an expired
/// path is told from one that does not chain the same way for both.
enum CertificatePathBuilder {
    /// What building the path found.
    enum Outcome {
        /// The path, leaf first, ending with the anchor.
        case valid([Certificate])
        /// The path chains and meets the policy, but this certificate is outside its validity
        /// period at the time.
        case expired(Certificate)
        /// No path leads to an anchor; the reasons of the nearest candidates.
        case invalid(String)
    }

    /// Builds a path from `leaf` through any of `intermediates` to one of `anchors`, valid at
    /// `time`, that also meets `policy` when one is given.
    static func build(
        leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], at time: Date,
        policy: (any VerifierPolicy)? = nil
    ) async -> Outcome {
        let roots = CertificateStore(anchors)
        let others = CertificateStore(intermediates)
        let extra = policy.map { AnyPolicy($0) }
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            if let extra { extra }
        }
        let failures: [CertificateValidationResult.PolicyFailure]
        switch await verifier.validate(leaf: leaf, intermediates: others) {
        case .validCertificate(let chain):
            return .valid(Array(chain))
        case .couldNotValidate(let found):
            failures = found
        }
        // Does it chain once dates are set aside? Then the dates are the problem.
        var undated = Verifier(rootCertificates: roots) {
            RFC5280Policy.withValidityCheckDisabled()
            if let extra { extra }
        }
        if case .validCertificate(let chain) = await undated.validate(leaf: leaf, intermediates: others),
            let outside = chain.first(where: { time < $0.notValidBefore || time > $0.notValidAfter })
        {
            return .expired(outside)
        }
        let reasons = failures.map { "\($0.policyFailureReason)" }
        return .invalid(reasons.isEmpty ? "no issuer was found for a certificate" : reasons.joined(separator: "; "))
    }
}

extension Certificate {
    /// How messages and reports name a certificate: its subject; when the subject is empty (TPM
    /// attestation identity certificates carry their names in subjectAltName only), its
    /// subject alternative names and its issuer and serial number.
    public var nameForMessages: String {
        guard subject.isEmpty else { return "\(subject)" }
        var parts: [String] = []
        if let names = try? extensions.subjectAlternativeNames, !names.isEmpty {
            parts.append("subjectAltName " + names.map(Self.text).joined(separator: ", "))
        }
        parts.append(issuer.isEmpty ? "serial \(serialNumber)" : "issued by \(issuer), serial \(serialNumber)")
        return "(no subject: " + parts.joined(separator: "; ") + ")"
    }

    private static func text(_ name: GeneralName) -> String {
        switch name {
        case .dnsName(let text), .rfc822Name(let text), .uniformResourceIdentifier(let text): text
        case .directoryName(let directoryName): "\(directoryName)"
        default: "\(name)"
        }
    }
}
