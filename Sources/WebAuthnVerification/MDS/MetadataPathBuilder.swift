import Foundation
@_spi(FixedExpiryValidationTime) @_spi(DisableValidityCheck) import X509

/// Builds and validates a certificate path with swift-certificates' `Verifier` and the RFC 5280
/// policy at a chosen time, and tells an expired path from one that does not chain.
/// TODO(fold): replace with the module's shared path-building helper once it exists.
enum MetadataPathBuilder {
    enum Outcome {
        /// The path, leaf first, ending with the anchor.
        case valid([Certificate])
        /// The path chains, but this certificate is outside its validity period at the time.
        case expired(Certificate)
        /// The path does not chain to an anchor.
        case invalid(String)
    }

    static func build(leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], at time: Date)
        async
        -> Outcome
    {
        var verifier = Verifier(rootCertificates: CertificateStore(anchors)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediates))
        switch result {
        case .validCertificate(let chain):
            return .valid(Array(chain))
        case .couldNotValidate(let failures):
            // Does it chain once dates are set aside? Then the dates are the problem.
            var undated = Verifier(rootCertificates: CertificateStore(anchors)) {
                RFC5280Policy.withValidityCheckDisabled()
            }
            if case .validCertificate(let chain) = await undated.validate(
                leaf: leaf, intermediates: CertificateStore(intermediates))
            {
                if let outside = chain.first(where: { time < $0.notValidBefore || time > $0.notValidAfter }) {
                    return .expired(outside)
                }
            }
            let reasons = failures.map { "\($0.policyFailureReason)" }
            return .invalid(
                reasons.isEmpty ? "no issuer was found for a certificate" : reasons.joined(separator: "; "))
        }
    }
}
