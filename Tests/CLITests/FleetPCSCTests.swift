import Foundation
import Testing

/// `securitykey fleet` over PC/SC: two virtual cards on the two readers of a private bed (one
/// CTAP 2.1 with a PIN, one CTAP 2.0 without), inspected together; and `--watch` following a
/// card put on a reader and taken off.
@Suite(.serialized) struct FleetPCSCTests {
    static let plainAAGUID = "12121212-3434-5656-7878-909090909090"
    static let pinAAGUID = "abababab-cdcd-efef-0101-232323232323"

    @Test func twoCardsAreInspectedTogetherWithVerdicts() throws {
        let work = try ChoiceCommandTests.scratch("fleet-pcsc")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            let vpcd = try #require(bed.environment["SECURITYKEY_VPCD_PORT"].flatMap(Int.init))
            let readers = (bed.environment["SECURITYKEY_VPCD_READERS"] ?? "").split(separator: "|").map(String.init)
            try #require(readers.count >= 2, "the bed has two readers")
            let plain = try ChoiceCommandTests.ServedKey(
                ["--pcsc", "127.0.0.1:\(vpcd)", "--aaguid", Self.plainAAGUID], environment: bed.environment,
                log: work.appendingPathComponent("plain.log"))
            let withPIN = try ChoiceCommandTests.ServedKey(
                ["--pcsc", "127.0.0.1:\(vpcd + 1)", "--aaguid", Self.pinAAGUID, "--pin", "123456", "--profile", "ctap21"],
                environment: bed.environment, log: work.appendingPathComponent("pin.log"))
            var keys: [[String: Any]] = []
            for _ in 0..<100 {
                let result = try bed.run(["fleet", "--json"])
                keys = (try? result.json() as? [[String: Any]]) ?? []
                if keys.filter({ $0["healthy"] as? Bool == true }).count == 2 { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            try #require(keys.count == 2, "\(keys)")
            #expect(keys.compactMap { $0["uri"] as? String } == readers.prefix(2).map { "pcsc:\($0)" })
            #expect(keys.allSatisfy { $0["transport"] as? String == "nfc" })
            #expect(keys.compactMap { $0["aaguid"] as? String } == [Self.plainAAGUID, Self.pinAAGUID])
            #expect(keys.map { $0["pinSet"] as? Bool } == [false, true])
            #expect(keys[1]["pinRetries"] as? Int == 8)
            #expect(keys.allSatisfy { $0["assertionStatus"] as? String == "CTAP2_ERR_NO_CREDENTIALS" })

            let csv = try bed.run(["fleet", "--csv"])
            try #require(csv.status == 0, "\(csv.stderr)")
            let rows = csv.stdout.split(separator: "\n")
            #expect(rows.count == 3)
            let ndjson = try bed.run(["fleet", "--ndjson"])
            #expect(ndjson.stdout.split(separator: "\n").count == 2)

            let policy = work.appendingPathComponent("pin.json")
            try Data(#"{"pinRequired": true, "minimumPINLength": 4}"#.utf8).write(to: policy)
            let judged = try bed.run(["fleet", "--json", "--policy", policy.path])
            #expect(judged.status == 7, "\(judged.stderr)")
            let verdicts = (try judged.json() as? [[String: Any]])?.map { ($0["policy"] as? [String: Any])?["pass"] as? Bool }
            #expect(verdicts == [false, true])
            _ = (plain, withPIN)
        }
    }

    @Test func watchFollowsACardPutOnAReaderAndTakenOff() throws {
        let work = try ChoiceCommandTests.scratch("fleet-pcsc-watch")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            let vpcd = try #require(bed.environment["SECURITYKEY_VPCD_PORT"].flatMap(Int.init))
            let readers = (bed.environment["SECURITYKEY_VPCD_READERS"] ?? "").split(separator: "|").map(String.init)
            let watcher = try FleetWatcher([], environment: bed.environment, in: work)
            Thread.sleep(forTimeInterval: 1)
            // Empty readers are not keys.
            #expect(watcher.events(within: 0.1) { _ in true }.isEmpty)
            var card: ChoiceCommandTests.ServedKey? = try ChoiceCommandTests.ServedKey(
                ["--pcsc", "127.0.0.1:\(vpcd)", "--aaguid", Self.plainAAGUID], environment: bed.environment,
                log: work.appendingPathComponent("card.log"))
            let arrived = watcher.events(within: 15) { $0.contains { $0["event"] as? String == "arrived" } }
            let first = try #require(arrived.first, "no arrival reported")
            #expect(first["uri"] as? String == "pcsc:\(readers.first ?? "")")
            #expect(first["aaguid"] as? String == Self.plainAAGUID)
            #expect(first["healthy"] as? Bool == true)
            card = nil  // the card leaves the reader
            let all = watcher.events(within: 15) { $0.contains { $0["event"] as? String == "left" } }
            #expect(all.map { $0["event"] as? String } == ["arrived", "left"], "\(all)")
            _ = card
        }
    }
}
