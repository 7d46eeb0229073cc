import CTAP2
import Foundation
import TestProcesses
import Testing
import WebAuthnVerification
import X509

/// The CRL distribution points and CRLs of real MDS signing chains (../shared/vectors/mds3: the
/// URLs below are what `openssl x509 -ext crlDistributionPoints` prints for those certificates,
/// the CRLs' dates and contents are in the README).
@Suite("Revocation: real MDS chains and CRLs")
struct RealChainRevocationTests {
    static let evG3URL = "http://crl.globalsign.com/gs/gsextendvalsha2g3r3.crl"
    static let rootR3URL = "http://crl.globalsign.com/root-r3.crl"

    @Test func distributionPointsOfTheChains() async throws {
        let chain2026 = try [
            "chain-2026/x5c0-leaf-mds.fidoalliance.org-2026-08-21.pem",
            "chain-2026/x5c1-GlobalSign-GCC-R46-EV-TLS-CA-2025.pem",
            "chain-2026/x5c2-GlobalSign-Root-R46-cross-signed-by-R3.pem",
        ].map(MDSVectors.certificate)
        #expect(
            chain2026.map(\.crlDistributionPointURLs) == [
                ["http://crl.globalsign.com/gsgccr46evtlsca2025.crl"],
                ["http://crl.globalsign.com/rootr46.crl"],
                [Self.rootR3URL],
            ])
        let blob = try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay).verify(
            MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(blob.signingChain.map(\.crlDistributionPointURLs) == [[Self.evG3URL], [Self.rootR3URL]])
        // The root names none, like every self-signed anchor.
        #expect(try #require(MDSVectors.r3).crlDistributionPointURLs.isEmpty)
    }

    /// Serves the README's 2024 CRLs for the URLs the chain names; `swap` serves each at the other's URL.
    static func checker(swap: Bool = false) -> RevocationChecker {
        RevocationChecker { url, _, _ in
            let evG3 = "crl/globalsign-ev-sha256-g3_thisUpdate-2024-08-31.crl"
            let r3 = "crl/globalsign-root-r3_thisUpdate-2024-07-07.crl"
            switch url {
            case evG3URL: return try MDSVectors.bytes(swap ? r3 : evG3)
            case rootR3URL: return try MDSVectors.bytes(swap ? evG3 : r3)
            default: throw MDSTestError("no CRL at \(url)")
            }
        }
    }

    @Test func blob122AgainstTheCRLsOfItsTime() async throws {
        // 2024-09-01: the EV G3 CRL (2024-08-31 .. 09-07) and the R3 CRL (07-07 .. 10-15) are
        // current, and neither lists the chain (README).
        let blob = try await MetadataBLOBVerifier(
            verifyTime: MDSVectors.day("2024-09-01"), revocation: Self.checker()
        ).verify(MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(blob.revocation == RevocationCheck(status: .checked, crls: [Self.evG3URL, Self.rootR3URL]))

        // At the BLOB's date both had passed their nextUpdate: not checked, and refused when required.
        let late = try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay, revocation: Self.checker())
            .verify(MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(late.revocation?.status == .notChecked)
        #expect(late.revocation?.problems.count == 2)
        #expect(late.revocation?.problems.allSatisfy { $0.contains("out of date") } == true)
        await expectCode(.revocationNotChecked) {
            try await MetadataBLOBVerifier(
                verifyTime: MDSVectors.blobDay, revocation: Self.checker(), requiresRevocation: true
            ).verify(MDSVectors.bytes("mds3-blob-no122.jwt"))
        }

        // A CRL signed by another CA than the certificate's issuer speaks for nothing.
        let swapped = try await MetadataBLOBVerifier(
            verifyTime: MDSVectors.day("2024-09-01"), revocation: Self.checker(swap: true)
        ).verify(MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(swapped.revocation?.status == .notChecked)
        #expect(swapped.revocation?.problems.allSatisfy { $0.contains("is not signed by") } == true)
    }
}

/// Attestation paths (root → intermediate → packed attestation certificate) made with openssl,
/// whose CRLs a loopback HTTP server serves.
@Suite("Revocation: attestation paths over HTTP", .serialized)
struct AttestationRevocationTests {
    static let aaguid = AAGUID(uuidString: "6d44ba9b-f6ec-2e49-b930-0c8fe920cb73") ?? .zero

    /// The PKI, its server, and evidence for the attestation certificate (trust path leaf, CA).
    struct Bed {
        let pki: TestPKI
        let server: LoopbackHTTPServer
        let root: Certificate
        let evidence: AttestationEvidence

        init(rootCRL: String? = nil) throws {
            let pki = try TestPKI()
            let server = try LoopbackHTTPServer(directory: pki.directory)
            self.pki = pki
            self.server = server
            try pki.certificate(
                "root", subject: "/CN=Test Attestation Root", issuer: nil, isCA: true, serial: "0a01")
            try pki.certificate(
                "ca", subject: "/CN=Test Attestation CA", issuer: "root", isCA: true,
                crlURLs: [rootCRL ?? server.url("root.crl")], serial: "0a02")
            try pki.certificate(
                "leaf", subject: "/C=US/O=Test/OU=Authenticator Attestation/CN=Test Key", issuer: "ca",
                isCA: false,
                crlURLs: [server.url("ca.crl")], serial: "0a03")
            try pki.crl(of: "root")
            try pki.crl(of: "ca")
            root = try Certificate(derEncoded: pki.bytes("root.der"))
            let path = try ["leaf", "ca"].map { try Certificate(derEncoded: pki.bytes("\($0).der")) }
            evidence = AttestationEvidence(
                format: .packed, aaguid: AttestationRevocationTests.aaguid,
                statement: AttestationVerification(type: .basic, trustPath: path))
        }

        /// Metadata listing the model with this root.
        func metadata() throws -> MetadataBLOBPayload {
            let entry: [String: Any] = [
                "aaguid": AttestationRevocationTests.aaguid.description.lowercased(),
                "metadataStatement": [
                    "description": "Test Key",
                    "attestationRootCertificates": [Data(try pki.bytes("root.der")).base64EncodedString()],
                ],
                "statusReports": [["status": "FIDO_CERTIFIED_L1", "effectiveDate": "2024-01-01"]],
            ]
            let json = try JSONSerialization.data(withJSONObject: [
                "legalHeader": "test", "no": 1, "nextUpdate": "2099-01-01", "entries": [entry],
            ])
            return try MetadataBLOBPayload(json: [UInt8](json))
        }

        func metadataTrust(requiring: Bool = false) throws -> MetadataAttestationTrust {
            MetadataAttestationTrust(
                metadata: try metadata(), revocation: RevocationChecker(timeout: 10),
                requiresRevocation: requiring)
        }
    }

    @Test func checkedThenARevokedIntermediateIsRefused() async throws {
        let bed = try Bed()
        let trust = try await bed.metadataTrust().evaluate(bed.evidence)
        #expect(trust.trustAnchor == bed.root)
        #expect(
            trust.revocation
                == RevocationCheck(
                    status: .checked, crls: [bed.server.url("ca.crl"), bed.server.url("root.crl")]))
        // Without a checker nothing is fetched.
        #expect(
            try await MetadataAttestationTrust(metadata: bed.metadata()).evaluate(bed.evidence).revocation
                == nil)
        // The same through explicit anchors.
        let anchored = try await CertificatePathAttestationTrust(
            anchors: AttestationTrustAnchors([bed.root]), revocation: RevocationChecker()
        ).evaluate(bed.evidence)
        #expect(anchored.revocation?.status == .checked)

        try bed.pki.revoke("ca", issuer: "root")
        try bed.pki.crl(of: "root")
        await expectCode(.certificateRevoked) { try await bed.metadataTrust().evaluate(bed.evidence) }
        await expectCode(.certificateRevoked) {
            try await CertificatePathAttestationTrust(
                anchors: AttestationTrustAnchors([bed.root]), revocation: RevocationChecker()
            ).evaluate(bed.evidence)
        }
    }

    @Test func aRevokedAttestationCertificateIsRefused() async throws {
        let bed = try Bed()
        try bed.pki.revoke("leaf", issuer: "ca")
        try bed.pki.crl(of: "ca")
        await expectCode(.certificateRevoked) { try await bed.metadataTrust().evaluate(bed.evidence) }
    }

    @Test func anUnreachableCRLIsNotCheckedAndFailsWhenRequired() async throws {
        let closed = try VirtualKeyBed.freePort(type: SOCK_STREAM)
        let unreachable = "http://127.0.0.1:\(closed)/root.crl"
        let bed = try Bed(rootCRL: unreachable)
        let trust = try await bed.metadataTrust().evaluate(bed.evidence)
        #expect(trust.revocation?.status == .notChecked)
        #expect(trust.revocation?.crls == [bed.server.url("ca.crl")])
        #expect(trust.revocation?.problems.count == 1)
        #expect(trust.revocation?.problems.first?.contains(unreachable) == true)
        #expect(trust.revocation?.summary.hasPrefix("revocation not checked") == true)
        await expectCode(.revocationNotChecked) {
            try await bed.metadataTrust(requiring: true).evaluate(bed.evidence)
        }
    }

    @Test func aCRLNotSignedByTheIssuerIsNotUsed() async throws {
        let bed = try Bed()
        // The CA's URL serves the root's list: signed by another CA than the leaf's issuer.
        try FileManager.default.removeItem(atPath: bed.pki.path("ca.crl"))
        try FileManager.default.copyItem(atPath: bed.pki.path("root.crl"), toPath: bed.pki.path("ca.crl"))
        let trust = try await bed.metadataTrust().evaluate(bed.evidence)
        #expect(trust.revocation?.status == .notChecked)
        #expect(trust.revocation?.problems.first?.contains("is not signed by") == true)
    }
}
