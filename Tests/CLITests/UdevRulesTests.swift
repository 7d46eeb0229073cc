import Foundation
import Testing

/// udev/70-securitykey.rules: as narrow as libfido2's. The fallback list must be exactly the
/// vendor/product pairs libfido2 states (Tests/Vectors/libfido2-fidodevs.json, with its source),
/// every fallback rule must name a product, and the fallback must only apply without fido_id.
struct UdevRulesTests {
    static let rules = PCSCBed.repository.appendingPathComponent("udev/70-securitykey.rules")
    static let vector = PCSCBed.repository.appendingPathComponent("Tests/Vectors/libfido2-fidodevs.json")

    struct Pair: Hashable, CustomStringConvertible {
        var vendor: String
        var product: String
        var description: String { "\(vendor):\(product)" }
    }

    static func ruleLines() throws -> [String] {
        try String(contentsOf: rules, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// The value of `KEY=="value"` in a rule line.
    static func match(_ key: String, in line: String) -> String? {
        guard let start = line.range(of: "\(key)==\"") else { return nil }
        let rest = line[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    @Test func theFallbackIsExactlyLibfido2sVendorAndProductList() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: Self.vector)) as? [String: Any])
        let devices = try #require(document["devices"] as? [[String: Any]])
        let stated = Set(devices.compactMap { device -> Pair? in
            guard let vendor = device["vendor"] as? String, let product = device["product"] as? String else { return nil }
            return Pair(vendor: vendor.lowercased(), product: product.lowercased())
        })
        #expect(stated.count == devices.count)
        var granted = Set<Pair>()
        for line in try Self.ruleLines() {
            guard let vendor = Self.match("ATTRS{idVendor}", in: line) else { continue }
            let products = try #require(Self.match("ATTRS{idProduct}", in: line), "no product in: \(line)")
            for product in products.split(separator: "|") {
                granted.insert(Pair(vendor: vendor.lowercased(), product: String(product).lowercased()))
            }
        }
        #expect(granted == stated, "extra: \(granted.subtracting(stated)), missing: \(stated.subtracting(granted))")
    }

    @Test func theUsagePageRuleComesFirstAndTheFallbackOnlyWithoutFidoID() throws {
        let lines = try Self.ruleLines()
        let token = try #require(lines.firstIndex { $0.contains("ENV{ID_SECURITY_TOKEN}==\"1\"") })
        let guards = lines.indices.filter { lines[$0].contains("TEST==") && lines[$0].contains("fido_id") }
        let fallback = try #require(lines.firstIndex { $0.contains("ATTRS{idVendor}") })
        #expect(guards.count == 2)
        #expect(guards.allSatisfy { token < $0 && $0 < fallback && lines[$0].contains("GOTO=\"securitykey_end\"") })
        // Removal events change nothing; only hidraw nodes are touched.
        #expect(lines.prefix(2).contains { $0.contains("ACTION==\"remove\"") })
        #expect(lines.prefix(2).contains { $0.contains("SUBSYSTEM!=\"hidraw\"") })
        #expect(lines.last == "LABEL=\"securitykey_end\"")
    }
}
