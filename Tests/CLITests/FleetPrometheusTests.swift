import Foundation
import TestProcesses
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `fleet --openmetrics` read by Debian's real Prometheus tools on 127.0.0.1: two "hosts", each a
/// node-exporter whose textfile directory `fleet --openmetrics --output` fills from its own
/// virtual keys, scraped by one Prometheus started here; PromQL through its HTTP API counts the
/// keys that fail the policy; `promtool` checks the file and the shipped rules; a key unplugged
/// between runs is gone from the next scrape. Every process is stopped by its PID.
@Suite(.serialized) struct FleetPrometheusTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A background process, killed (SIGKILL, by its PID) and reaped when dropped.
    final class Child {
        let background: BackgroundProcess
        init(_ executable: String, _ arguments: [String], name: String, work: URL) throws {
            background = try TestProcess.start(
                URL(fileURLWithPath: executable), arguments, name: name, work: work)
        }
        var pid: Int32 { background.process.processIdentifier }
        func stop() {
            if background.process.isRunning { kill(pid, SIGKILL) }
            background.process.waitUntilExit()
        }
        deinit { stop() }
    }

    /// GET `url` with curl (2 s at most); nil when it does not answer 2xx.
    static func get(_ url: String) -> String? {
        guard
            let out = try? TestProcess.run(
                "/usr/bin/curl", ["-sf", "--max-time", "2", url], timeout: .seconds(5)),
            out.status == 0
        else { return nil }
        return out.stdoutText
    }

    /// Polls `probe` every 0.2 s for up to `seconds`; its first non-nil answer.
    static func poll<T>(_ seconds: Double, _ probe: () -> T?) -> T? {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            if let value = probe() { return value }
            Thread.sleep(forTimeInterval: 0.2)
        } while Date() < end
        return nil
    }

    /// The result vector of the instant PromQL `query`, through Prometheus' HTTP API.
    static func query(_ port: Int, _ query: String) -> [[String: Any]]? {
        guard var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query") else {
            return nil
        }
        components.queryItems = [URLQueryItem(name: "query", value: query)]
        guard let url = components.url, let text = get(url.absoluteString),
            let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            object["status"] as? String == "success", let data = object["data"] as? [String: Any]
        else { return nil }
        return data["result"] as? [[String: Any]]
    }

    /// The numeric value of a one-sample vector (as Prometheus returns it: [time, "value"]).
    static func value(_ sample: [String: Any]) -> Double? {
        (sample["value"] as? [Any])?.last.flatMap { $0 as? String }.flatMap(Double.init)
    }

    static func requireTools() throws {
        for tool in [
            "/usr/bin/prometheus", "/usr/bin/promtool", "/usr/bin/prometheus-node-exporter", "/usr/bin/curl",
        ] {
            try #require(
                FileManager.default.isExecutableFile(atPath: tool),
                "\(tool) is missing: make deps installs prometheus, prometheus-node-exporter and curl")
        }
    }

    /// `fleet --openmetrics --output DIR/securitykey.prom` over `udp`, with `policy`.
    static func refresh(_ directory: URL, udp: [Int], policy: URL) throws -> CLIRunner.Result {
        try CLIRunner.run(
            [
                "fleet", "--openmetrics", "--output",
                directory.appendingPathComponent("securitykey.prom").path, "--policy", policy.path,
                "--key-timeout", "3",
            ] + udp.flatMap { ["--udp", "127.0.0.1:\($0)"] })
    }

    @Test func twoNodeExportersScrapedByOnePrometheusCountTheFailingKeysAndForgetAnUnpluggedOne() throws {
        try Self.requireTools()
        let work = try ChoiceCommandTests.scratch("fleet-prometheus")
        defer { try? FileManager.default.removeItem(at: work) }
        let policy = work.appendingPathComponent("policy.json")
        try Data(#"{"pinRequired": true}"#.utf8).write(to: policy)

        // Each host: two keys with a PIN (one `--count 2` process) and one without, which
        // fails the policy.
        var hosts: [(directory: URL, withPIN: [Int], bare: Int)] = []
        var keys: [ChoiceCommandTests.ServedKey] = []
        var bareKeys: [ChoiceCommandTests.ServedKey?] = []
        for name in ["a", "b"] {
            let directory = work.appendingPathComponent("textfile-\(name)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let base = CLIRunner.freeUDPPort(count: 2), bare = CLIRunner.freeUDPPort()
            keys.append(
                try ChoiceCommandTests.ServedKey(
                    ["--udp", "127.0.0.1:\(base)", "--count", "2", "--pin", "123456", "--profile", "ctap21"],
                    log: work.appendingPathComponent("\(name)-pin.log")))
            bareKeys.append(
                try ChoiceCommandTests.ServedKey(
                    ["--udp", "127.0.0.1:\(bare)"], log: work.appendingPathComponent("\(name)-bare.log")))
            hosts.append((directory, [base, base + 1], bare))
        }
        for host in hosts {
            for port in host.withPIN + [host.bare] { CLIRunner.waitUntilServed("udp:127.0.0.1:\(port)") }
            let result = try Self.refresh(host.directory, udp: host.withPIN + [host.bare], policy: policy)
            #expect(result.status == 7, "one key fails the policy: \(result.stderr)")
            #expect(result.stdout.isEmpty, "--output writes the file, not standard output")
        }

        // promtool, Prometheus' own linter, accepts the file as it is.
        let file = hosts[0].directory.appendingPathComponent("securitykey.prom")
        let text = try String(contentsOf: file, encoding: .utf8)
        let lint = try TestProcess.run(
            "/usr/bin/promtool", ["check", "metrics"], input: Data(text.utf8), timeout: .seconds(30))
        #expect(lint.status == 0, "promtool check metrics: \(lint.stdoutText) \(lint.stderrText)")
        // Readable by node-exporter's user, and no temporary file left beside it.
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o644)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: hosts[0].directory.path) == [
                "securitykey.prom"
            ])
        #expect(!text.contains("123456"), "no PIN in the metrics")

        // Two node-exporters (textfile collector only) and one Prometheus scraping both every second.
        var exporters: [Child] = []
        var exporterPorts: [Int] = []
        for (index, host) in hosts.enumerated() {
            let port = try VirtualKeyBed.freePort(type: SOCK_STREAM)
            exporterPorts.append(port)
            exporters.append(
                try Child(
                    "/usr/bin/prometheus-node-exporter",
                    [
                        "--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults",
                        "--collector.textfile",
                        "--collector.textfile.directory=\(host.directory.path)",
                    ],
                    name: "node-exporter-\(index)", work: work))
        }
        let prometheusPort = try VirtualKeyBed.freePort(type: SOCK_STREAM)
        let config = work.appendingPathComponent("prometheus.yml")
        try Data(
            """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: securitykey
                static_configs:
                  - targets: [\(exporterPorts.map { "'127.0.0.1:\($0)'" }.joined(separator: ", "))]
            """.utf8
        ).write(to: config)
        let prometheus = try Child(
            "/usr/bin/prometheus",
            [
                "--config.file=\(config.path)",
                "--storage.tsdb.path=\(work.appendingPathComponent("tsdb").path)",
                "--web.listen-address=127.0.0.1:\(prometheusPort)",
            ],
            name: "prometheus", work: work)
        defer {
            prometheus.stop()
            for exporter in exporters { exporter.stop() }
        }
        for port in exporterPorts {
            #expect(
                Self.poll(10) { Self.get("http://127.0.0.1:\(port)/metrics") } != nil,
                "node-exporter on \(port) is up")
        }
        let up = Self.poll(30) { () -> [[String: Any]]? in
            guard let result = Self.query(prometheusPort, "count(securitykey_fleet_keys)"),
                result.first.flatMap(Self.value) == 2
            else { return nil }
            return result
        }
        try #require(
            up != nil, "Prometheus never scraped both hosts: \(prometheus.background.stderr.suffix(2000))")

        // The failing keys across both hosts: one per host.
        let failing = Self.query(prometheusPort, "count(securitykey_key_policy_pass == 0)")
        #expect(failing?.first.flatMap(Self.value) == 2)
        let perHost =
            Self.query(prometheusPort, "count by (instance) (securitykey_key_policy_pass == 0)") ?? []
        #expect(
            Set(perHost.compactMap { ($0["metric"] as? [String: String])?["instance"] })
                == Set(exporterPorts.map { "127.0.0.1:\($0)" }))
        #expect(perHost.allSatisfy { Self.value($0) == 1 })
        // The failing rule is the label; the failing keys are the ones without a PIN.
        let rules = Self.query(prometheusPort, "securitykey_key_policy_violation") ?? []
        #expect(
            rules.compactMap { ($0["metric"] as? [String: String])?["rule"] } == [
                "pinRequired", "pinRequired",
            ])
        #expect(
            Set(rules.compactMap { ($0["metric"] as? [String: String])?["uri"] })
                == Set(hosts.map { "udp:127.0.0.1:\($0.bare)" }))
        // The four keys with a PIN say so; CTAP 2.1 §6.5.2.2: no attempt spent, all 8 are left
        // (on the keys without a PIN too: the counter starts at 8).
        #expect(
            Self.query(prometheusPort, "count(securitykey_key_pin_set == 1)")?.first.flatMap(Self.value) == 4)
        let retries = Self.query(prometheusPort, "securitykey_key_pin_retries") ?? []
        #expect(retries.count == 6 && retries.allSatisfy { Self.value($0) == 8 }, "\(retries)")
        #expect(Self.query(prometheusPort, "sum(securitykey_fleet_keys)")?.first.flatMap(Self.value) == 6)

        // Host B's key without a PIN is unplugged: the next run leaves it out, and the next scrape forgets it.
        let gone = "udp:127.0.0.1:\(hosts[1].bare)"
        bareKeys[1] = nil
        let again = try Self.refresh(hosts[1].directory, udp: hosts[1].withPIN, policy: policy)
        #expect(again.status == 0, "the keys left all pass: \(again.stderr)")
        let forgotten = Self.poll(20) { () -> Bool? in
            guard let series = Self.query(prometheusPort, "securitykey_key_healthy{uri=\"\(gone)\"}"),
                series.isEmpty
            else {
                return nil
            }
            return true
        }
        #expect(forgotten == true, "the unplugged key is still scraped")
        #expect(
            Self.query(prometheusPort, "count(securitykey_key_policy_pass == 0)")?.first.flatMap(Self.value)
                == 1)
        #expect(Self.query(prometheusPort, "sum(securitykey_fleet_keys)")?.first.flatMap(Self.value) == 5)
        _ = (keys, bareKeys)
    }

    /// A metrics file that cannot be written is an error with its own code; the old file is kept.
    @Test func anUnwritableOutputFailsWithItsCode() throws {
        let work = try ChoiceCommandTests.scratch("fleet-unwritable")
        defer { try? FileManager.default.removeItem(at: work) }
        let port = CLIRunner.freeUDPPort()
        let key = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(port)"], log: work.appendingPathComponent("key.log"))
        CLIRunner.waitUntilServed("udp:127.0.0.1:\(port)")
        let missing = work.appendingPathComponent("no-such-directory/securitykey.prom").path
        let result = try CLIRunner.run([
            "fleet", "--openmetrics", "--output", missing, "--udp", "127.0.0.1:\(port)",
        ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains("output-unwritable") || result.stderr.contains(missing), "\(result.stderr)"
        )
        #expect(!FileManager.default.fileExists(atPath: missing))
        _ = key
    }

    /// The shipped alert rules load in Prometheus' rule checker, and the units pass systemd's.
    @Test func promtoolAcceptsTheShippedRulesAndSystemdTheUnits() throws {
        try Self.requireTools()
        let rules = Self.repository.appendingPathComponent("prometheus/securitykey-rules.yml").path
        let check = try TestProcess.run(
            "/usr/bin/promtool", ["check", "rules", rules], timeout: .seconds(30))
        #expect(check.status == 0, "\(check.stdoutText) \(check.stderrText)")
        #expect(check.stdoutText.contains("SUCCESS"))
        for alert in [
            "SecurityKeyFailsPolicy", "SecurityKeyPINAttemptsLow", "SecurityKeyMDSDataStale",
            "SecurityKeyRevokedByMDS",
        ] {
            #expect(try String(contentsOfFile: rules, encoding: .utf8).contains("alert: \(alert)"))
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            Issue.record("systemd-analyze is missing: make deps installs systemd")
            return
        }
        // As `make install` writes them: the service names the binary where it is installed
        // (here, the one built).
        let work = try ChoiceCommandTests.scratch("fleet-units")
        defer { try? FileManager.default.removeItem(at: work) }
        let service = try String(
            contentsOf: Self.repository.appendingPathComponent("systemd/securitykey-fleet.service"),
            encoding: .utf8)
        try Data(
            service.replacingOccurrences(of: "/usr/local/bin/securitykey", with: CLIRunner.binary.path).utf8
        )
        .write(to: work.appendingPathComponent("securitykey-fleet.service"))
        try FileManager.default.copyItem(
            at: Self.repository.appendingPathComponent("systemd/securitykey-fleet.timer"),
            to: work.appendingPathComponent("securitykey-fleet.timer"))
        let verify = try TestProcess.run(
            "/usr/bin/systemd-analyze",
            [
                "verify", work.appendingPathComponent("securitykey-fleet.service").path,
                work.appendingPathComponent("securitykey-fleet.timer").path,
            ],
            timeout: .seconds(60))
        #expect(verify.status == 0, "\(verify.stderrText)")
        #expect(verify.stderrText.isEmpty, "systemd-analyze verify complained: \(verify.stderrText)")
    }
}
