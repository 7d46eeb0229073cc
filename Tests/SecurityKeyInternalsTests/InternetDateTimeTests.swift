import Foundation
import TestProcesses
import Testing

@testable import _SecurityKeyInternals

/// The one parser of `--verify-time` values, checked against GNU date(1)'s reading of the same
/// text (`date -u -d TEXT +%s.%N`), an implementation that shares no code with it.
struct InternetDateTimeTests {
    @Test(arguments: [
        "1970-01-01T00:00:00Z", "2024-01-31T12:00:00Z", "2024-02-29T23:59:59Z", "2000-02-29",
        "1969-12-31T23:59:59Z", "1900-03-01", "2100-12-31T00:00:00Z", "2024-12-16",
        "2024-06-30T10:15:00+02:00", "2024-06-30T10:15:00-07:30", "2024-01-31T12:00:00.250Z",
        "2024-01-31 12:00:00Z", "2038-01-19T03:14:08Z", "9999-12-31T23:59:59Z", "0001-01-01",
    ])
    func agreesWithGNUDate(_ text: String) throws {
        // date(1) reads a lone date as local midnight: TZ=UTC0 makes it UTC midnight, as here.
        let output = try TestProcess.run("/usr/bin/date", ["-u", "-d", text, "+%s.%N"], environment: ["TZ": "UTC0"])
        try #require(output.status == 0, "date(1) refused \(text)")
        let expected = try #require(Double(output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let parsed = try #require(InternetDateTime.secondsSince1970(text))
        #expect(abs(parsed - expected) < 0.000_001, "\(text): \(parsed) vs date(1)'s \(expected)")
    }

    @Test(arguments: [
        "", "2024", "2024-1-31", "2024-13-01", "2024-02-30", "2023-02-29", "1900-02-29", "2024-01-31T",
        "2024-01-31T12:00", "2024-01-31T12:00:00", "2024-01-31T24:00:00Z", "2024-01-31T12:60:00Z",
        "2024-01-31T12:00:00+0100", "2024-01-31T12:00:00.Z", "2024-01-31T12:00:00Zjunk", "31/01/2024",
        "2024-01-31x", "２０２４-01-31",
    ])
    func refuses(_ text: String) {
        #expect(InternetDateTime.secondsSince1970(text) == nil)
    }
}
