extension FleetRow {
    /// A CSV line of `fields` (RFC 4180 quoting where a field needs it).
    public static func csvLine(_ fields: [String]) -> String {
        fields.map(csvField).joined(separator: ",")
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }

    /// The rows as a table for people (URI, model, firmware, PIN, retries, health, time, and the
    /// attestation and policy verdicts when asked for), then a line per failure, attestation
    /// problem and policy reason.
    public static func table(_ rows: [FleetRow], withPolicy: Bool, withAttestation: Bool = false) -> [String] {
        var out: [String] = []
        var header = ["URI", "MODEL / AAGUID", "FW", "PIN", "RETRIES", "HEALTH", "MS"]
        if withAttestation { header.append("ATTEST") }
        if withPolicy { header.append("POLICY") }
        var lines = [header]
        for row in rows {
            let r = row.report
            let modelText: String = row.model ?? r.info.map { $0.aaguid.description.lowercased() } ?? "-"
            let firmware: String = r.info?.firmwareVersion.map { String($0) } ?? "-"
            var pinText = "-"
            if let isSet = r.pinStatus?.isSet { pinText = isSet ? "set" : "not set" }
            let retries: String = r.pinStatus?.retries.map { String($0) } ?? "-"
            let health: String = r.isHealthy ? "ok" : (r.failure?.code.rawValue ?? "failed")
            var line: [String] = [
                r.descriptor.uri, modelText, firmware, pinText, retries, health, String(r.elapsed.wholeMilliseconds),
            ]
            if withAttestation {
                line.append(row.attestation.map { $0.isGenuine ? "genuine" : "NOT PROVEN" } ?? "-")
            }
            if withPolicy { line.append(row.violations?.isEmpty == true ? "pass" : "FAIL") }
            lines.append(line)
        }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        for line in lines {
            var text = line.enumerated().map { $1 + String(repeating: " ", count: max(0, widths[$0] - $1.count)) }
                .joined(separator: "  ")
            while let last = text.last, last.isWhitespace, !last.isNewline { text.removeLast() }
            out.append(text)
        }
        for row in rows {
            if let failure = row.report.failure {
                out.append("\(row.report.descriptor.uri): \(failure.message)")
            }
            if let problem = row.attestation?.problem {
                out.append("\(row.report.descriptor.uri): attestation: \(problem)")
            }
            for reason in row.violations ?? [] { out.append("\(row.report.descriptor.uri): policy: \(reason)") }
        }
        return out
    }

    /// One line for people: URI, model or AAGUID, firmware, PIN, health, and the verdicts.
    public var summary: String {
        let r = report
        var parts = [r.descriptor.uri, model ?? r.info.map { $0.aaguid.description.lowercased() } ?? "-"]
        if let firmware = r.info?.firmwareVersion { parts.append("fw \(firmware)") }
        if let isSet = r.pinStatus?.isSet { parts.append(isSet ? "PIN set" : "no PIN") }
        parts.append(r.isHealthy ? "healthy" : "unhealthy: \(r.failure?.message ?? "no answer")")
        if let attestation { parts.append(attestation.isGenuine ? "genuine" : "attestation not proven") }
        if let violations { parts.append(violations.isEmpty ? "policy pass" : "policy FAIL: " + violations.joined(separator: " ")) }
        return parts.joined(separator: "  ")
    }
}
