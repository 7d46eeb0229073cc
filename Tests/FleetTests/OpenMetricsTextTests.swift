import Authenticators
import Fleet
import Foundation
import Testing
import Transport

/// The OpenMetrics text `fleet --openmetrics` writes: escaping as OpenMetrics 1.0 specifies it,
/// and the labels a key is named by.
struct OpenMetricsTextTests {
    /// OpenMetrics 1.0, "ABNF": a label value escapes backslash, double quote and line feed as
    /// `\\`, `\"` and `\n`, and nothing else.
    @Test(arguments: [
        (#"plain"#, #"plain"#),
        ("back\\slash", #"back\\slash"#),
        ("say \"hi\"", #"say \"hi\""#),
        ("two\nlines", #"two\nlines"#),
        ("tab\tand é", "tab\tand é"),
    ])
    func labelValuesAreEscapedAsTheSpecificationSays(raw: String, escaped: String) {
        #expect(OpenMetricsText.escapeLabelValue(raw) == escaped)
        var text = OpenMetricsText()
        text.gauge("x_value", help: "A value.", [OpenMetricsText.Sample([("model", raw)], 1)])
        #expect(
            text.finished
                == "# HELP x_value A value.\n# TYPE x_value gauge\nx_value{model=\"\(escaped)\"} 1\n# EOF\n")
    }

    @Test func emptyLabelsAreLeftOutAndValuesWrittenAsBothFormatsReadThem() {
        var text = OpenMetricsText()
        text.gauge(
            "x_value", help: "A value.",
            [
                OpenMetricsText.Sample([("a", ""), ("b", "1")], 0.25), OpenMetricsText.Sample([], 3),
                OpenMetricsText.Sample([], .nan), OpenMetricsText.Sample([], -.infinity),
            ])
        #expect(
            text.text.split(separator: "\n").dropFirst(2) == [
                "x_value{b=\"1\"} 0.25", "x_value 3", "x_value NaN", "x_value -Inf",
            ])
    }

    /// A key with a stored token is named by its identifier (stable across ports and replugs);
    /// one without, by its URI. The AAGUID, transport and the policy's rule are labels; no PIN
    /// attempt count or other value is.
    @Test func aKeyIsLabelledByItsIdentifierWhereThereIsOneElseItsURI() {
        var known = FleetKeyReport(descriptor: DeviceDescriptor(uri: "hid:/dev/hidraw7", transport: .usb))
        known.identifier = [0xAB, 0xCD, 0x01]
        let unknown = FleetKeyReport(descriptor: DeviceDescriptor(uri: "udp:127.0.0.1:9", transport: .udp))
        let run = FleetRun(
            rows: [known, unknown].map {
                FleetRow(report: $0, metadata: nil, policy: FleetPolicy(pinRequired: true))
            },
            policy: FleetPolicy(pinRequired: true), attested: false, metadata: FleetMetadata(),
            finishedAt: Date(timeIntervalSince1970: 1_700_000_000), duration: .milliseconds(1500))
        let lines = run.openMetrics.split(separator: "\n").map(String.init)
        #expect(lines.contains(#"securitykey_key_healthy{identifier="abcd01",transport="usb"} 0"#))
        #expect(lines.contains(#"securitykey_key_healthy{uri="udp:127.0.0.1:9",transport="udp"} 0"#))
        #expect(!lines.contains { $0.contains("hidraw7") }, "the identifier replaces the URI")
        // Neither key could be inspected: the policy names that rule.
        #expect(
            lines.contains(
                #"securitykey_key_policy_violation{uri="udp:127.0.0.1:9",transport="udp",rule="inspection"} 1"#
            ))
        #expect(lines.contains("securitykey_fleet_keys 2"))
        #expect(lines.contains("securitykey_fleet_run_duration_seconds 1.5"))
        #expect(lines.contains("securitykey_fleet_run_timestamp_seconds 1700000000"))
        #expect(lines.contains("securitykey_mds_cache_present 0"))
        #expect(lines.last == "# EOF")
    }
}
