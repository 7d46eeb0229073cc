import Foundation
import TestProcesses
import Testing
import Transport

@testable import Authenticators

/// Which keys a fleet inspects at once (``FleetSchedule`` under ``FleetConcurrency``): every
/// key by default, PC/SC cards no more than pcsc-lite has readers, a `--concurrency` cap obeyed.
/// The logic only, no timing.
struct FleetConcurrencyTests {
    /// `PCSCLITE_MAX_READERS_CONTEXTS` as pcsc-lite's own header defines it.
    static func pcscLiteReaders() throws -> Int {
        let header = try String(contentsOfFile: "/usr/include/PCSC/pcsclite.h", encoding: .utf8)
        let line = try #require(
            header.split(separator: "\n").first { $0.contains("#define PCSCLITE_MAX_READERS_CONTEXTS") })
        return try #require(line.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) })
    }

    /// Runs `schedule` to the end, finishing keys first in, first out; the most keys of each
    /// transport (and in all) in flight at any moment, and the order keys started in.
    static func drain(_ schedule: inout FleetSchedule) -> (
        peak: [TransportKind: Int], total: Int, order: [Int]
    ) {
        var peak: [TransportKind: Int] = [:]
        var total = 0
        var order: [Int] = []
        var running: [Int] = []
        repeat {
            let started = schedule.startable()
            order += started
            running += started
            total = max(total, schedule.inFlight)
            for transport in Set(schedule.transports) {
                peak[transport] = max(peak[transport, default: 0], schedule.inFlight(transport))
            }
            guard !running.isEmpty else { break }
            schedule.finished(running.removeFirst())
        } while true
        return (peak, total, order)
    }

    @Test func byDefaultEveryKeyStartsAtOnceAndPCSCCardsStayWithinPCSCLiteReaders() throws {
        let readers = try Self.pcscLiteReaders()
        #expect(FleetConcurrency.pcscReaders == readers)
        // 64 UDP keys (the latency simulator's fleet), 10 USB keys and 20 PC/SC cards (more than
        // pcsc-lite could ever list) under a common open-file limit.
        let transports =
            [TransportKind](repeating: .udp, count: 64) + [TransportKind](repeating: .usb, count: 10)
            + [TransportKind](repeating: .nfc, count: 20)
        var schedule = FleetSchedule(transports, bounds: FleetConcurrency(openFiles: 1024))
        let first = schedule.startable()
        #expect(
            first.count == 64 + 10 + readers, "every UDP and USB key and as many cards as there are readers")
        #expect(schedule.inFlight(.nfc) == readers)
        #expect(schedule.startable().isEmpty, "nothing more until a card finishes")
        // A card finishing lets exactly the next card start.
        let card = try #require(first.first { transports[$0] == .nfc })
        schedule.finished(card)
        let next = schedule.startable()
        #expect(next.count == 1 && next.allSatisfy { transports[$0] == .nfc })
        #expect(!schedule.isDrained, "three cards still wait for a reader")

        var whole = FleetSchedule(transports, bounds: FleetConcurrency(openFiles: 1024))
        let run = Self.drain(&whole)
        #expect(run.peak[.nfc] == readers)
        #expect(run.peak[.udp] == 64)
        #expect(run.order.sorted() == Array(transports.indices), "every key starts exactly once")
    }

    @Test func aConcurrencyCapIsObeyedAndKeysStartInTheirOrder() {
        let transports =
            [TransportKind](repeating: .udp, count: 10) + [TransportKind](repeating: .nfc, count: 3)
        var schedule = FleetSchedule(transports, bounds: FleetConcurrency(limit: 3, openFiles: 1024))
        #expect(schedule.startable() == [0, 1, 2])
        schedule.finished(1)
        #expect(schedule.startable() == [3])
        var whole = FleetSchedule(transports, bounds: FleetConcurrency(limit: 3, openFiles: 1024))
        let run = Self.drain(&whole)
        #expect(run.total == 3)
        #expect(run.order == Array(transports.indices))
    }

    @Test func theOpenFileLimitBoundsTheKeysInFlight() {
        // Each key in flight holds at least one descriptor: a process that may open 100 files
        // never has 100 keys in flight, whatever else it has open.
        let transports = [TransportKind](repeating: .udp, count: 500)
        var schedule = FleetSchedule(transports, bounds: FleetConcurrency(openFiles: 100))
        let run = Self.drain(&schedule)
        #expect(run.total >= 1 && run.total < 100)
        #expect(run.order.count == 500)
    }

    @Test func theSystemBoundIsTheShellsOpenFileLimit() async throws {
        // The soft limit as the shell's `ulimit -n` reports it for a child of this process.
        let text = try await TestProcess.run("/bin/sh", ["-c", "ulimit -n"]).stdoutText
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = trimmed == "unlimited" ? 1024 : try #require(Int(trimmed))
        #expect(FleetConcurrency.openFileLimit() == expected)
        #expect(FleetConcurrency.system() == FleetConcurrency(openFiles: expected))
    }
}
