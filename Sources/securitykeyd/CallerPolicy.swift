import Foundation
import SDBus

/// Who may use the daemon, and for which origins.
///
/// By default only callers of the daemon's own uid are served, and any of them may claim any
/// origin: the bus tells who is calling, but not which web site a local program speaks for.
/// A configuration file narrows that by binding executables to the origins they may claim:
///
/// ```
/// # executable                 origins it may claim (exact, or https://*.domain for subdomains)
/// /usr/bin/example-browser     *
/// /usr/local/bin/example-app   https://example.org https://*.example.org
/// deny-unlisted                # callers whose executable is not listed are refused
/// allow-uid 1001               # another user allowed to call (system bus)
/// ```
struct CallerPolicy: Sendable {
    /// Origins per executable path; `*` allows any.
    var bindings: [String: [String]] = [:]
    /// Whether executables not listed are refused.
    var denyUnlisted = false
    /// Uids served besides the daemon's own.
    var allowedUIDs: Set<UInt32> = []
    /// The daemon's own uid.
    var ownUID: UInt32 = getuid()

    /// The most lines and bytes a policy file may have.
    static let maximumBytes = 64 * 1024

    /// Reads the policy file at `path`; errors name the line.
    init(contentsOf path: String) throws(PolicyError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PolicyError("Cannot read the policy file \(path).")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: Self.maximumBytes + 1)) ?? Data()
        guard data.count <= Self.maximumBytes else {
            throw PolicyError("The policy file \(path) is larger than \(Self.maximumBytes) bytes.")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw PolicyError("The policy file \(path) is not UTF-8.")
        }
        try self.init(text: text, name: path)
    }

    /// The default policy: the daemon's own uid, any origin.
    init() {}

    /// Parses policy text.
    init(text: String, name: String = "policy") throws(PolicyError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line =
                rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let first = words.first else { continue }
            switch first {
            case "deny-unlisted":
                denyUnlisted = true
            case "allow-uid":
                guard words.count == 2, let uid = UInt32(words[1]) else {
                    throw PolicyError("\(name) line \(index + 1): allow-uid takes one number.")
                }
                allowedUIDs.insert(uid)
            default:
                guard first.hasPrefix("/"), words.count >= 2 else {
                    throw PolicyError(
                        "\(name) line \(index + 1): expected an absolute executable path and the origins it may claim."
                    )
                }
                for origin in words.dropFirst() where origin != "*" && !origin.hasPrefix("https://") {
                    throw PolicyError("\(name) line \(index + 1): \(origin) is not * or an https origin.")
                }
                bindings[first, default: []] += words.dropFirst()
            }
        }
    }

    /// Why `caller` may not claim `origin`, or nil when it may.
    func refusal(_ caller: BusCaller, origin: String?) -> String? {
        guard let uid = caller.uid else { return "The bus did not tell the caller's uid." }
        guard uid == ownUID || allowedUIDs.contains(uid) else {
            return "Callers of uid \(uid) are not served by this daemon."
        }
        guard let origin else { return nil }
        guard let executable = caller.executable, let allowed = bindings[executable] else {
            return denyUnlisted ? "This program is not allowed to use security keys." : nil
        }
        if allowed.contains("*") || allowed.contains(origin) { return nil }
        for pattern in allowed where pattern.hasPrefix("https://*.") {
            let domain = String(pattern.dropFirst("https://*.".count))
            if origin.hasPrefix("https://"), origin.dropFirst("https://".count).hasSuffix("." + domain) {
                return nil
            }
        }
        return "This program may not claim the origin \(origin)."
    }
}

/// A policy file that cannot be used.
struct PolicyError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
