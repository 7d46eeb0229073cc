import CTAP2
import Foundation
import Testing
import WebAuthnVerification

/// `mds update` and `mds show` as library calls: the real BLOB 122 (the MDS3 vectors' README
/// gives its serial number, entry count and verification date) verified into a cache.
@Suite("MDS3 cache updates")
struct MetadataUpdateTests {
    @Test func realBLOB122IsVerifiedStoredAndReported() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mds-update-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = MetadataCache(directory: dir)
        let bytes = try MDSVectors.bytes("mds3-blob-no122.jwt")
        let update = try await cache.update(
            with: bytes, source: "vectors", previous: try cache.record(), verifyTime: MDSVectors.blobDay)
        #expect(update.previous == nil)
        #expect(try cache.record()?.no == 122)
        #expect(try cache.record()?.source == "vectors")
        let json = update.json.text()
        #expect(json.hasPrefix(#"{"no":122,"nextUpdate":"2025-01-01","#))
        #expect(json.contains(#""algorithm":"RS256","#))
        // No revocation checker was given: nothing was fetched, and the document says so.
        #expect(json.contains(#""previousNo":null,"cache":"\#(cache.blobURL.path)","revocation":null}"#))
        // Updating again with the same BLOB names the one it replaced; an older one is refused.
        let again = try await cache.update(
            with: bytes, source: "vectors", previous: try cache.record(), verifyTime: MDSVectors.blobDay)
        #expect(again.json.text().contains(#""previousNo":122,"#))
        let fake = try MDSVectors.certificate("test/conformance-mds3-root-FAKE.der")
        let older = try MDSVectors.bytes("test/conformance-mds3-blob-no42-GOOD.jwt")
        await expectCode(.metadataRollback) {
            try await cache.update(with: older, source: "test", previous: try cache.record(), anchors: [fake])
        }
        #expect(try cache.record()?.no == 122)
        // The YubiKey 5 entry by AAGUID, through the cache.
        let aaguid = try #require(AAGUID(uuidString: "cb69481e-8ff7-4039-93ec-0a2729a154a8"))
        let yk = try #require(cache.entry(aaguid: aaguid, attestationCertificate: nil))
        let lines = yk.summaryLines(blob: update.blob, stale: false)
        #expect(lines.first == "Model: YubiKey 5 Series")
        #expect(lines.contains("Authenticator version: 50100"))
        #expect(lines.last == "From BLOB no 122, next update 2025-01-01.")
        #expect(yk.summaryLines(blob: update.blob, stale: true).last == "From BLOB no 122, next update 2025-01-01 (passed).")
    }
}
