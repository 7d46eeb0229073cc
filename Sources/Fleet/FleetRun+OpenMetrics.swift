import _SecurityKeyInternals
import Authenticators
import FoundationEssentials

extension FleetRun {
    /// The run as OpenMetrics text (`securitykey fleet --openmetrics`): metric names and labels
    /// in Docs/Fleet.md. Each key is labelled by its stable identity (`identifier`, its
    /// decrypted encIdentifier, where a stored persistent token fits it; else `uri`) and
    /// described by `aaguid`, `model`, `firmware` and `transport`. No PIN, token or credential
    /// ID is ever written.
    public var openMetrics: String {
        var out = OpenMetricsText()
        typealias Sample = OpenMetricsText.Sample
        let keys = rows.map { (row: $0, labels: $0.metricLabels) }
        func perKey(_ name: String, _ help: String, _ value: (FleetRow) -> Double?) {
            out.gauge(
                name, help: help, keys.compactMap { key in value(key.row).map { Sample(key.labels, $0) } })
        }
        func flag(_ value: Bool?) -> Double? { value.map { $0 ? 1 : 0 } }

        out.gauge(
            "securitykey_fleet_keys", help: "Security keys present in this run.",
            [Sample([], Double(rows.count))])
        perKey(
            "securitykey_key_healthy",
            "1 when the key answered getInfo and the silent assertion as a healthy key does."
        ) {
            flag($0.report.isHealthy)
        }
        if policy != nil {
            perKey(
                "securitykey_key_policy_pass",
                "1 when the key satisfies the fleet policy, 0 when it fails it."
            ) {
                flag($0.ruleViolations?.isEmpty)
            }
            out.gauge(
                "securitykey_key_policy_violation",
                help: "1 for each policy rule the key breaks (label rule).",
                keys.flatMap { key in
                    Set((key.row.ruleViolations ?? []).map(\.rule)).sorted().map {
                        Sample(key.labels + [("rule", $0)], 1)
                    }
                })
        }
        perKey("securitykey_key_pin_set", "1 when a PIN is set on the key.") {
            flag($0.report.pinStatus?.isSet)
        }
        perKey("securitykey_key_pin_retries", "PIN attempts left before the key blocks its PIN.") {
            $0.report.pinStatus?.retries.map(Double.init)
        }
        perKey("securitykey_key_uv_retries", "Built-in user verification attempts left.") {
            $0.report.pinStatus?.uvRetries.map(Double.init)
        }
        perKey(
            "securitykey_key_always_uv",
            "1 when the key requires user verification for every operation (alwaysUv)."
        ) {
            $0.report.info.map { $0.isEnabled(.alwaysUV) ? 1 : 0 }
        }
        perKey("securitykey_key_min_pin_length", "The shortest PIN the key accepts, in characters.") {
            ($0.report.pinStatus?.minPINLength ?? $0.report.info?.minPINLength.map { Int(clamping: $0) }).map(
                Double.init)
        }
        out.gauge(
            "securitykey_key_mds_status",
            help: "1 for the key's latest metadata (MDS) status for its firmware (label status).",
            keys.compactMap { key in key.row.status.map { Sample(key.labels + [("status", $0)], 1) } })
        perKey(
            "securitykey_key_mds_status_refused",
            "1 when the key's metadata status is one relying parties refuse (revoked, compromised, UV bypass)."
        ) { flag($0.statusRefused) }
        out.gauge(
            "securitykey_key_certification_level",
            help:
                "The model's FIDO certification for the key's firmware: 1 L1, 2 L1plus, 3 L2, 4 L2plus, 5 L3, 6 L3plus, 0 none or no level (label certification).",
            keys.compactMap { key in
                key.row.certification.map {
                    Sample(
                        key.labels + [("certification", $0)],
                        Double((FleetPolicy.certificationRank($0) ?? -1) + 1))
                }
            })
        if attested {
            perKey(
                "securitykey_key_attestation_verified",
                "1 when the key's attestation verified and chains to a trusted root."
            ) {
                flag($0.attestation?.isGenuine ?? false)
            }
        }
        perKey("securitykey_key_inspection_seconds", "How long the key's inspection took.") {
            Double($0.report.elapsed.wholeMilliseconds) / 1000
        }

        let present = metadata.payload != nil
        out.gauge(
            "securitykey_mds_cache_present", help: "1 when a verified metadata (MDS) BLOB is cached.",
            [Sample([], present ? 1 : 0)])
        out.gauge(
            "securitykey_mds_cache_age_seconds",
            help: "Seconds since the cached metadata BLOB was verified and stored.",
            metadata.age(at: finishedAt).map { [Sample([], $0.rounded())] } ?? [])
        out.gauge(
            "securitykey_mds_next_update_timestamp_seconds",
            help: "When the cached metadata BLOB says the next one is due (Unix time).",
            metadata.nextUpdate.map { [Sample([], $0.timeIntervalSince1970.rounded())] } ?? [])
        out.gauge(
            "securitykey_mds_stale", help: "1 when the cached metadata BLOB's nextUpdate has passed.",
            metadata.isStale(at: finishedAt).map { [Sample([], $0 ? 1 : 0)] } ?? [])

        out.gauge(
            "securitykey_fleet_run_duration_seconds", help: "How long this inventory run took.",
            [Sample([], Double(duration.wholeMilliseconds) / 1000)])
        out.gauge(
            "securitykey_fleet_run_timestamp_seconds", help: "When this inventory run ended (Unix time).",
            [Sample([], finishedAt.timeIntervalSince1970.rounded())])
        out.gauge(
            "securitykey_fleet_errors",
            help: "Errors in this run, by code: keys that failed their inspection, and the run's own.",
            errorCounts.map { Sample([("code", $0.code)], Double($0.count)) })
        return out.finished
    }

    /// Errors of this run by code, sorted: each key's failure, a listing denied, a damaged cache.
    var errorCounts: [(code: String, count: Int)] {
        var counts: [String: Int] = [:]
        for row in rows {
            if let failure = row.report.failure { counts[failure.code.rawValue, default: 0] += 1 }
        }
        if let listingProblem { counts[listingProblem.code.rawValue, default: 0] += 1 }
        if metadata.problem != nil { counts["metadata-cache-unavailable", default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Writes ``openMetrics`` to `path` atomically (a temporary file beside it, renamed into
    /// place, as node-exporter's textfile collector requires), readable by everyone (mode 0644:
    /// the collector runs as another user).
    public func writeOpenMetrics(to path: String) throws(FleetError) {
        do throws(PrivateFile.Failure) {
            try PrivateFile(path: path).write(Array(openMetrics.utf8), mode: 0o644)
        } catch {
            throw FleetError(.outputUnwritable, error.description)
        }
    }
}

extension FleetRow {
    /// The labels of every per-key metric: the key's stable identity (`identifier` where a
    /// stored token gives it, else `uri`), then `aaguid`, `model`, `firmware` and `transport`.
    var metricLabels: [(String, String)] {
        let info = report.info
        return [
            identifier.map { ("identifier", $0) } ?? ("uri", report.descriptor.uri),
            ("aaguid", info.map { $0.aaguid.description.lowercased() } ?? ""),
            ("model", model ?? ""),
            ("firmware", info?.firmwareVersion.map { String($0) } ?? ""),
            ("transport", report.descriptor.transport.rawValue),
        ]
    }
}
