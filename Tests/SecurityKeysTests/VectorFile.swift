import Foundation

/// One entry of the shared vector files (Tests/Vectors/*.json): hex bytes with the source's
/// statement of what they mean.
struct VectorEntry: Decodable, Sendable {
    var id: String
    var kind: String
    var hex: String?

    var bytes: [UInt8] {
        guard let hex else { return [] }
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
            let byte = UInt8(hex[index..<next], radix: 16)
        {
            out.append(byte)
            index = next
        }
        return out
    }

    static func load(_ file: String) throws -> [VectorEntry] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Vectors/\(file)")
        return try JSONDecoder().decode([VectorEntry].self, from: Data(contentsOf: url))
    }
}
