import Foundation
import TestProcesses
import Testing

/// securitykeyd on a private bus, driven by independent clients: busctl (systemd) and a
/// pure-python D-Bus client (jeepney) whose options come from python-fido2's Fido2Server,
/// which also verifies the daemon's responses.
@Suite(.serialized) struct DaemonTests {
    static let pin = "123456"

    @Test func introspectionIsTheCommittedXML() throws {
        let bed = try DaemonBed(keys: 1, pin: nil)
        defer { bed.stop() }
        let out = try bed.busctl([
            "--json=short", "call", "org.securitykey.Daemon1", "/org/securitykey/Daemon1",
            "org.freedesktop.DBus.Introspectable", "Introspect",
        ])
        try #require(out.status == 0, "\(out.stderr)")
        let data = try #require(jsonObject(out.stdout)?["data"] as? [String])
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("dbus/org.securitykey.Daemon1.xml")
        let committed = try String(contentsOf: file, encoding: .utf8)
        #expect(
            data.first?.trimmingCharacters(in: .whitespacesAndNewlines)
                == committed.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func busctlSeesDevicesCapabilitiesAndErrors() throws {
        let bed = try DaemonBed(keys: 2, pin: nil)
        let listed = try bed.call("ListDevices")
        #expect(listed.stdout.contains("\"udp:127.0.0.1:\(bed.ports[0])\""))
        #expect(listed.stdout.contains("\"udp:127.0.0.1:\(bed.ports[1])\""))
        #expect(listed.stdout.contains("\"FIDO_2_0\""))
        let capabilities = try bed.call("GetClientCapabilities")
        #expect(capabilities.stdout.contains("\"hybridTransport\" b false"))

        // Malformed JSON, wrong member types, wrong D-Bus types, a foreign origin: WebAuthn's
        // error names, and the daemon keeps serving.
        let malformed = try bed.call("CreateCredential", "sss", ["https://example.org", "", "{\"rp\":"])
        #expect(malformed.status != 0)
        #expect(malformed.stderr.contains("JSON"))
        let wrongType = try bed.busctl([
            "--json=short", "call", "org.securitykey.Daemon1", "/org/securitykey/Daemon1",
            "org.securitykey.Daemon1",
            "GetCredential", "sss", "https://example.org", "", "{\"challenge\":42}",
        ])
        #expect(wrongType.stderr.contains("challenge must be a base64url string"))
        let dbusTypes = try bed.call("CreateCredential", "sis", ["https://example.org", "1", "{}"])
        #expect(dbusTypes.status != 0)
        let foreignOrigin = try bed.call(
            "GetCredential", "sss",
            ["https://evil.example", "", "{\"challenge\":\"AAAA\",\"rpId\":\"example.org\"}"])
        #expect(foreignOrigin.stderr.contains("relying party ID"))
        let unknownRequest = try bed.call("CancelRequest", "s", ["nope"])
        #expect(unknownRequest.stderr.contains("No request nope of yours"))
        #expect(try bed.call("ListDevices").status == 0)
        // SIGTERM: a graceful stop.
        #expect(bed.stop() == 0)
    }

    @Test func errorNamesAreWebAuthnsInTheDaemonsNamespace() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: nil)
        defer { bed.stop() }
        let bad = try bed.client(python, ["raw", "CreateCredential", "https://example.org", "{\"rp\":5}"])
        #expect(bad.stdout.contains("org.securitykey.Daemon1.Error.TypeError"), "\(bad.stderr)")
        let huge = "{\"challenge\":\"" + String(repeating: "A", count: 400_000) + "\"}"
        let big = try bed.client(python, ["raw", "GetCredential", "https://example.org", "-"], input: huge)
        #expect(big.stdout.contains("org.securitykey.Daemon1.Error.TypeError"), "\(big.stderr)")
        let security = try bed.client(
            python,
            [
                "raw", "GetCredential", "https://evil.example",
                "{\"challenge\":\"AAAA\",\"rpId\":\"example.org\"}",
            ])
        #expect(security.stdout.contains("org.securitykey.Daemon1.Error.SecurityError"), "\(security.stderr)")
        #expect(try bed.call("ListDevices").status == 0)
    }

    @Test func pythonClientRegistersAndSignsInWithPIN() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: Self.pin)
        defer { bed.stop() }
        let out = try bed.client(python, ["ceremonies", "2", Self.pin])
        try #require(out.status == 0, "\(out.stdout) \(out.stderr)")
        let results = try #require(jsonObject(out.stdout)?["results"] as? [[String: Any]])
        #expect(results.count == 2)
        #expect(results.allSatisfy { $0["verified"] as? Bool == true })
        // The sign-in went through the PIN (CTAP 2.0 keys with a PIN insist on it).
        #expect((results.first?["states"] as? [String])?.contains("NEEDS_PIN") == true)
        // The PIN never reaches the log.
        let log = try String(contentsOf: bed.daemonLog, encoding: .utf8)
        #expect(!log.contains(Self.pin))
    }

    @Test func onlyTheCallerAnswersOrCancelsItsRequest() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: Self.pin)
        defer { bed.stop() }
        let out = try bed.client(python, ["foreign", Self.pin])
        let object = try #require(jsonObject(out.stdout), "\(out.stderr)")
        #expect(object["at"] as? String == "NEEDS_PIN")
        #expect(object["EnterClientPin"] as? String == "org.securitykey.Daemon1.Error.InvalidStateError")
        #expect(object["CancelRequest"] as? String == "org.securitykey.Daemon1.Error.InvalidStateError")
        #expect(object["ownerPin"] as? String == "ok")
        #expect(object["owner"] as? String == "reply")

        let cancelled = try #require(jsonObject(try bed.client(python, ["cancel"]).stdout))
        #expect(cancelled["cancelReply"] as? String == "ok")
        #expect(cancelled["outcome"] as? String == "org.securitykey.Daemon1.Error.AbortError")
    }

    @Test func aCallerLeavingCancelsItsRequestAndFreesTheKey() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: Self.pin)
        defer { bed.stop() }
        // Another caller's ceremonies, meanwhile, on the same key: unaffected.
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Python/daemon_client.py").path
        let other = try TestProcess.start(
            URL(fileURLWithPath: python), [script, bed.address, "ceremonies", "3", Self.pin], name: "other",
            work: bed.directory)
        let left = try #require(jsonObject(try bed.client(python, ["disconnect", Self.pin]).stdout))
        #expect(left["left"] as? String == "NEEDS_PIN")
        other.process.waitUntilExit()
        #expect(other.process.terminationStatus == 0, "\(other.stdout) \(other.stderr)")
        let results = jsonObject(other.stdout)?["results"] as? [[String: Any]]
        #expect(results?.count == 3 && results?.allSatisfy { $0["verified"] as? Bool == true } == true)
        let log = try String(contentsOf: bed.daemonLog, encoding: .utf8)
        let id = try #require(left["requestId"] as? String)
        // The key is free again: another caller's ceremony finishes long before any deadline.
        let started = Date()
        let next = try bed.client(python, ["ceremonies", "1", Self.pin])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(Date().timeIntervalSince(started) < 60)
        let after = try String(contentsOf: bed.daemonLog, encoding: .utf8)
        #expect((log + after).contains("caller left; cancelling its request"))
        #expect(after.contains(id))
    }

    @Test func theCallerChoosesAmongDiscoverableCredentials() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: nil)
        defer { bed.stop() }
        let out = try bed.client(python, ["select"])
        let object = try #require(jsonObject(out.stdout), "\(out.stdout) \(out.stderr)")
        #expect(object["allowCredentials"] as? Int == 0)
        // The key offered exactly the two credentials Fido2Server registered.
        let offered = try #require(object["offered"] as? [String])
        #expect(offered.count == 2)
        #expect(offered == object["registered"] as? [String])
        #expect((object["states"] as? [String])?.contains("SELECT_CREDENTIAL") == true)
        #expect(object["foreign"] as? String == "org.securitykey.Daemon1.Error.InvalidStateError")
        #expect(object["owner"] as? String == "ok")
        // Fido2Server verified the assertion, made with the credential chosen (not the first offered).
        #expect(object["verifiedChosen"] as? Bool == true, "\(object)")
        #expect(object["userHandleChosen"] as? Bool == true)
    }

    @Test func gdbusIsAClientToo() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: nil)
        defer { bed.stop() }
        let listed = try bed.gdbus("ListDevices")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("'uri': <'udp:127.0.0.1:\(bed.ports[0])'>"))
        #expect(listed.stdout.contains("'FIDO_2_0'"))
        let capabilities = try bed.gdbus("GetClientCapabilities")
        #expect(capabilities.stdout.contains("'hybridTransport': <false>"))
        #expect(capabilities.stdout.contains("'extension:appid': <true>"))
        // Every extension Docs/Daemon.md says the daemon maps is a capability (an input names
        // its extension: credentialProtectionPolicy is credProtect's).
        for name in try Self.documentedExtensions() {
            #expect(capabilities.stdout.contains("'extension:\(name)': <true>"), "\(name): \(capabilities.stdout)")
        }
        let foreign = try bed.gdbus(
            "GetCredential",
            ["https://evil.example", "", "{\"challenge\":\"AAAA\",\"rpId\":\"example.org\"}"])
        #expect(foreign.status != 0)
        #expect(foreign.stderr.contains("org.securitykey.Daemon1.Error.SecurityError"))
        let malformed = try bed.gdbus("CreateCredential", ["https://example.org", "", "{\"rp\":"])
        #expect(malformed.stderr.contains("org.securitykey.Daemon1.Error.TypeError"))
        let unknown = try bed.gdbus("CancelRequest", ["nope"])
        #expect(unknown.stderr.contains("org.securitykey.Daemon1.Error.InvalidStateError"))
        // A registration and a sign-in with gdbus as the client, verified by Fido2Server.
        let ceremony = try bed.client(python, ["gdbus"])
        #expect(
            jsonObject(ceremony.stdout)?["verified"] as? Bool == true, "\(ceremony.stdout) \(ceremony.stderr)"
        )
    }

    @Test func twentyConcurrentClientsOnTwoKeysAllFinish() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 2, pin: Self.pin)
        defer { bed.stop() }
        let results = Mutex20()
        DispatchQueue.concurrentPerform(iterations: 20) { index in
            let out = try? bed.client(python, ["ceremonies", "1", Self.pin])
            results.set(index, out?.status == 0)
            if out?.status != 0 { print("client \(index): \(out?.stdout ?? "") \(out?.stderr ?? "")") }
        }
        #expect(results.all())
        // Both keys served requests.
        let log = try String(contentsOf: bed.daemonLog, encoding: .utf8)
        #expect(bed.ports.allSatisfy { log.contains("device=udp:127.0.0.1:\($0)") })
    }
}

/// Twenty outcomes written from concurrent threads.
final class Mutex20: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes = [Bool](repeating: false, count: 20)
    func set(_ index: Int, _ value: Bool) {
        lock.lock()
        outcomes[index] = value
        lock.unlock()
    }
    func all() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return outcomes.allSatisfy { $0 }
    }
}

extension DaemonTests {
    /// The extension inputs the "Extensions:" paragraph of Docs/Daemon.md lists, by extension.
    static func documentedExtensions() throws -> Set<String> {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/Daemon.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let start = text.range(of: "Extensions: the JSON is type-checked"),
            let end = text.range(of: "Their outputs come back", range: start.upperBound..<text.endIndex)
        else { throw DaemonBed.BedError(description: "Docs/Daemon.md has no Extensions paragraph") }
        let words = text[start.upperBound..<end.lowerBound].split(whereSeparator: { !$0.isLetter })
        let inputs: [String: String] = [
            "credProps": "credProps", "hmacCreateSecret": "hmacCreateSecret", "minPinLength": "minPinLength",
            "credBlob": "credBlob", "credentialProtectionPolicy": "credProtect", "prf": "prf",
            "largeBlob": "largeBlob", "appidExclude": "appidExclude", "appid": "appid", "getCredBlob": "getCredBlob",
        ]
        let found = Set(words.compactMap { inputs[String($0)] })
        guard found.count == Set(inputs.values).count else {
            throw DaemonBed.BedError(description: "Docs/Daemon.md's Extensions paragraph names \(found.sorted()) only")
        }
        return found
    }
}
