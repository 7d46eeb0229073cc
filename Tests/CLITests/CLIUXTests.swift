import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import TestProcesses
import Testing

/// What a key owner expects of the command line (issue 34): the account choice, --appid,
/// errors that say what to do, fleet and wink over port ranges, decode from standard input.
/// Every run is the built binary against `virtual serve --udp`.
@Suite(.serialized) struct CLIUXTests {
    // MARK: Errors that say what to do, without a key

    @Test func rpTakesADomainNotAURL() throws {
        for command in [
            ["authenticate", "--rp", "https://example.org/login"],
            ["register", "--rp", "https://example.org", "--user", "u"],
            ["hmac-secret", "--rp", "https://example.org", "--salt", String(repeating: "00", count: 32)],
        ] {
            let result = try CLIRunner.run(command)
            #expect(result.status == 64, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("--rp takes a domain, not a URL"), "\(result.stderr)")
            #expect(result.stderr.contains("--rp example.org"), "\(result.stderr)")
        }
    }

    @Test func unknownDeviceSchemeListsTheSchemes() throws {
        let result = try CLIRunner.run(["info", "--device", "usb:/dev/hidraw0", "--json"])
        #expect(result.status == 64, "\(result.stderr)")
        for scheme in ["hid:", "pcsc:", "udp:"] {
            #expect(result.stderr.contains(scheme), "\(scheme) is not named: \(result.stderr)")
        }
        #expect(result.stderr.contains("usb:"))
    }

    @Test func aUDPPortWhereNothingAnswersSaysSo() throws {
        let port = CLIRunner.freeUDPPort()
        let result = try CLIRunner.run(["info", "--device", "udp:127.0.0.1:\(port)?local=0", "--timeout", "5"])
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("Nothing answers"), "\(result.stderr)")
        #expect(!result.stderr.contains("gone"), "\(result.stderr)")
    }

    @Test func oneTimeParserForVerifyTime() throws {
        // February 30th does not exist: the one parser refuses it for every --verify-time.
        let mds = try CLIRunner.run([
            "mds", "update", "--file", "/nonexistent", "--verify-time", "2024-02-30",
        ])
        #expect(mds.status == 64, "\(mds.stderr)")
        #expect(mds.stderr.contains("RFC 3339"), "\(mds.stderr)")
        let verify = try CLIRunner.run(
            ["verify", "--registration", "-", "--verify-time", "2024-02-30T00:00:00Z"], input: "{}")
        #expect(verify.status == 64, "\(verify.stderr)")
        #expect(verify.stderr.contains("RFC 3339"), "\(verify.stderr)")
    }

    // MARK: decode

    @Test func decodeReadsStandardInputAndFallsBackToGenericCBOR() throws {
        // {1: [1], 3: h'00…00'} (16 bytes) looks like a getInfo reply (versions, aaguid) but its
        // versions are not strings: shown as generic CBOR, with the reason.
        let hex = "a2" + "018101" + "0350" + String(repeating: "00", count: 16)
        let result = try CLIRunner.run(["decode"], input: hex)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try result.object()
        #expect(object["kind"] as? String == "cbor")
        // RFC 8949 §8 diagnostic notation of the bytes above.
        #expect(object["diagnostic"] as? String == "{1: [1], 3: h'00000000000000000000000000000000'}")
        #expect((object["note"] as? String)?.contains("get-info") == true, "\(object)")
        // The same bytes from standard input with "-" and as a file argument agree.
        #expect(try CLIRunner.run(["decode", "-"], input: hex).stdout == result.stdout)
    }

    // MARK: Accounts

    /// Two discoverable accounts on one key: no choice without a terminal (a usage error naming
    /// both), --user and --user-id choose, and a terminal shows a numbered picker.
    @Test func choosingTheAccount() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21"]) {
            CLIRunner.waitUntilServed(device)
            let alice = "YWxpY2UtaGFuZGxlLTAx"  // base64url of "alice-handle-01"
            let bob = "Ym9iLWhhbmRsZS0wMg"  // base64url of "bob-handle-02"
            // A key names its accounts only to a verified user: it has a PIN, which the default
            // ('preferred') user verification uses.
            let pin = "1234\n"
            #expect(try CLIRunner.run(["pin", "set", "--device", device, "--pin-stdin"], input: pin).status == 0)
            for (name, id) in [("alice", alice), ("bob", bob)] {
                let made = try CLIRunner.run(
                    [
                        "register", "--device", device, "--rp", "example.org", "--user", name, "--user-id", id,
                        "--resident", "--hmac-secret", "--pin-stdin", "--json",
                    ], input: pin)
                try #require(made.status == 0, "\(made.stderr)")
            }
            let base = ["authenticate", "--device", device, "--rp", "example.org", "--json"]
            let refused = try CLIRunner.run(base + ["--pin-stdin"], input: pin)
            #expect(refused.status == 64, "\(refused.stderr)")
            for text in ["alice", "bob", alice, bob, "--user"] {
                #expect(refused.stderr.contains(text), "\(text) missing: \(refused.stderr)")
            }
            func handle(_ result: CLIRunner.Result) throws -> String? {
                try (result.object()["response"] as? [String: Any])?["userHandle"] as? String
            }
            let asBob = try CLIRunner.run(base + ["--user", "bob", "--pin-stdin"], input: pin)
            #expect(asBob.status == 0, "\(asBob.stderr)")
            #expect(try handle(asBob) == bob)
            // The user handle needs no verification.
            let asAlice = try CLIRunner.run(base + ["--user-id", alice, "--no-uv"])
            #expect(asAlice.status == 0, "\(asAlice.stderr)")
            #expect(try handle(asAlice) == alice)
            let nobody = try CLIRunner.run(base + ["--user", "carol", "--pin-stdin"], input: pin)
            #expect(nobody.status == 1, "\(nobody.stderr)")
            #expect(nobody.stderr.contains("alice") && nobody.stderr.contains("bob"), "\(nobody.stderr)")
            // Without verification the key gives no names: the message says how to get them.
            let unnamed = try CLIRunner.run(base + ["--user", "bob", "--no-uv"])
            #expect(unnamed.status == 1, "\(unnamed.stderr)")
            #expect(unnamed.stderr.contains("add --uv"), "\(unnamed.stderr)")

            // hmac-secret chooses the same way (by user handle: it never verifies without --uv).
            let salt = String(repeating: "ab", count: 32)
            let secret = ["hmac-secret", "--device", device, "--rp", "example.org", "--salt", salt]
            #expect(try CLIRunner.run(secret).status == 64)
            let bobSecret = try CLIRunner.run(secret + ["--user-id", bob])
            #expect(bobSecret.status == 0, "\(bobSecret.stderr)")
            let aliceSecret = try CLIRunner.run(secret + ["--user-id", alice])
            #expect(aliceSecret.status == 0, "\(aliceSecret.stderr)")
            #expect(bobSecret.stdout.count == 65 && bobSecret.stdout != aliceSecret.stdout)
            let bobVerified = try CLIRunner.run(secret + ["--user", "bob", "--uv", "--pin-stdin"], input: pin)
            #expect(bobVerified.status == 0, "\(bobVerified.stderr)")

            // On a terminal (script(1) gives the command one), a numbered list to choose from;
            // the PIN is the first line of its input, the choice the second.
            let command = ([CLIRunner.binary.path] + base + ["--pin-stdin"]).map { "'\($0)'" }.joined(separator: " ")
            let picked = try CLIRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                input: pin + "2\n")
            #expect(picked.status == 0, "\(picked.stdout)")
            let lines = picked.stdout.components(separatedBy: "\n")
            let second = try #require(lines.first { $0.contains("2) ") }, "no numbered list: \(picked.stdout)")
            let expected = second.contains("alice") ? alice : bob
            #expect(lines.contains { $0.contains("1) ") })
            #expect(picked.stdout.contains("\"userHandle\": \"\(expected)\""), "\(picked.stdout)")
        }
    }

    // MARK: AppID

    @Test func appIDIsReportedAndCheckedAgainstTheOrigin() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let appID = "https://example.org/u2f/appid.json"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21"]) {
            CLIRunner.waitUntilServed(device)
            // A credential made (by python-fido2) under the AppID itself, as a U2F site's were.
            let legacy = try PythonFido2.runScript(python, "appid_credential.py", [String(port), appID])
            let legacyID = try #require(legacy["credentialId"] as? String)
            let made = try CLIRunner.run(["register", "--device", device, "--rp", "example.org", "--user", "u", "--json"])
            try #require(made.status == 0, "\(made.stderr)")
            let modernID = try #require(try made.object()["id"] as? String)

            func appIDResult(_ credential: String) throws -> (Bool?, String?) {
                let result = try CLIRunner.run([
                    "authenticate", "--device", device, "--rp", "example.org", "--credential", credential,
                    "--appid", appID, "--json",
                ])
                try #require(result.status == 0, "\(result.stderr)")
                let object = try result.object()
                let used = (object["clientExtensionResults"] as? [String: Any])?["appid"] as? Bool
                let authData = (object["response"] as? [String: Any])?["authenticatorData"] as? String
                return (used, authData)
            }
            let (legacyUsed, legacyAuthData) = try appIDResult(legacyID)
            #expect(legacyUsed == true)
            // Signed under the AppID: the rpIdHash is python-fido2's SHA-256 of the AppID.
            let rpIDHash = try #require(legacyAuthData.flatMap(Self.base64URL)).prefix(32)
            #expect(Self.hex(Array(rpIDHash)) == legacy["appIdHash"] as? String)
            let (modernUsed, _) = try appIDResult(modernID)
            #expect(modernUsed == false, "appid is reported false when the RP ID found the credential")

            // Without --appid, no appid member.
            let plain = try CLIRunner.run([
                "authenticate", "--device", device, "--rp", "example.org", "--credential", modernID, "--json",
            ])
            #expect((try plain.object()["clientExtensionResults"] as? [String: Any])?["appid"] == nil)

            // An AppID of another site is refused before the key is asked.
            for foreign in ["https://example.net/appid.json", "http://example.org/appid.json"] {
                let refused = try CLIRunner.run([
                    "authenticate", "--device", device, "--rp", "example.org", "--credential", legacyID,
                    "--appid", foreign, "--json",
                ])
                #expect(refused.status == 64, "\(refused.stderr)")
                let error = try refused.object()["error"] as? [String: Any]
                #expect(error?["code"] as? String == "security-error", "\(refused.stdout)")
            }
        }
    }

    // MARK: User verification, credProtect, a forced PIN change, a touch that never comes

    @Test func userVerificationPreferredAndWhatToDoWhenItIsMissing() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21"]) {
            CLIRunner.waitUntilServed(device)
            #expect(try CLIRunner.run(["pin", "set", "--device", device, "--pin-stdin"], input: "1234\n").status == 0)
            let made = try CLIRunner.run(
                [
                    "register", "--device", device, "--rp", "example.org", "--user", "u", "--cred-protect", "3",
                    "--pin-stdin", "--json",
                ], input: "1234\n")
            try #require(made.status == 0, "\(made.stderr)")
            let id = try #require(try made.object()["id"] as? String)
            let base = ["authenticate", "--device", device, "--rp", "example.org", "--credential", id, "--json"]
            // Without user verification the key does not show the credential: the message says --uv.
            let hidden = try CLIRunner.run(base + ["--no-uv"])
            #expect(hidden.status == 1, "\(hidden.stderr)")
            #expect(hidden.stderr.contains("add --uv"), "\(hidden.stderr)")
            // By default ('preferred', as browsers) a key with a PIN verifies the user.
            let preferred = try CLIRunner.run(base + ["--pin-stdin"], input: "1234\n")
            #expect(preferred.status == 0, "\(preferred.stderr)")
            #expect(try preferred.object()["userVerified"] as? Bool == true)

            // A key that demands a new PIN: --pin-stdin names the two lines it needs.
            let forced = try CLIRunner.run(
                ["config", "min-pin-length", "6", "--force-change", "--yes", "--pin-stdin", "--device", device],
                input: "1234\n")
            try #require(forced.status == 0, "\(forced.stderr)")
            let needsTwo = try CLIRunner.run(base + ["--pin-stdin"], input: "")
            #expect(needsTwo.status == 5, "\(needsTwo.stderr)")
            #expect(
                needsTwo.stderr.contains("new PIN on the first line")
                    && needsTwo.stderr.contains("current PIN on the second"), "\(needsTwo.stderr)")
            let changed = try CLIRunner.run(base + ["--pin-stdin"], input: "123456\n1234\n")
            #expect(changed.status == 0, "\(changed.stderr)")
        }
    }

    @Test func aTouchThatNeverComesIsSaidAsSuch() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21", "--presence", "never"]) {
            CLIRunner.waitUntilServed(device)
            let result = try CLIRunner.run([
                "register", "--device", device, "--rp", "example.org", "--user", "u", "--timeout", "2",
            ])
            #expect(result.status == 4, "\(result.stderr)")
            #expect(result.stderr.contains("No touch within 2 s"), "\(result.stderr)")
        }
    }

    // MARK: Many keys: port ranges, fleet --csv and --watch, wink --all

    @Test func portRangesFleetAndWinkAll() throws {
        let port = CLIRunner.freeUDPPort(count: 3)
        let range = "127.0.0.1:\(port)-\(port + 2)"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--count", "3", "--profile", "ctap21"]) {
            for offset in 0..<3 { CLIRunner.waitUntilServed("udp:127.0.0.1:\(port + offset)?local=0") }
            let winked = try CLIRunner.run(["wink", "--all", "--udp", range, "--json"])
            #expect(winked.status == 0, "\(winked.stderr)")
            let keys = try #require(try winked.json() as? [[String: Any]])
            #expect(keys.count == 3)
            #expect(keys.allSatisfy { $0["winked"] as? Bool == true }, "\(winked.stdout)")
            #expect(Set(keys.compactMap { $0["device"] as? String }).count == 3)

            // Every column Docs/CLI.md documents for fleet --csv, in the header.
            let csv = try CLIRunner.run(["fleet", "--udp", range, "--csv"])
            #expect(csv.status == 0, "\(csv.stderr)")
            let lines = csv.stdout.split(separator: "\n")
            #expect(lines.count == 4, "a header and one row per key: \(csv.stdout)")
            let header = Set((lines.first ?? "").split(separator: ",").map(String.init))
            let documented = try Self.documentedFleetColumns()
            #expect(documented.count > 30)
            for column in documented {
                #expect(header.contains(column), "fleet --csv lacks the documented column \(column)")
            }

            // fleet --watch reports the keys and ends with status 0 on SIGINT (Ctrl-C).
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID())")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            let watch = try CLIRunner.start(["fleet", "--watch", "--udp", range, "--json"], name: "watch", work: work)
            let deadline = Date(timeIntervalSinceNow: 20)
            while Date() < deadline, watch.stdout.components(separatedBy: "\"arrived\"").count < 4 {
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(watch.stdout.components(separatedBy: "\"arrived\"").count == 4, "\(watch.stdout)")
            watch.process.interrupt()
            watch.process.waitUntilExit()
            #expect(watch.process.terminationStatus == 0, "\(watch.stderr)")
        }
    }

    // MARK: verify

    /// libfido2's Windows Hello TPM registration (regress/cred.c): its AIK certificate has an
    /// empty subject; `verify` names it by what openssl x509 shows instead: the subjectAltName
    /// (2.23.133.2.2=ST33HTPHAHB4) and the issuer (CN=EUS-STM-KEYID-1ADB…).
    @Test func verifyNamesASubjectlessCertificate() throws {
        let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("../shared/vectors/third-party/libfido2-wiredata.json")
            .standardized
        // The attestation object is {fmt, attStmt, authData} around libfido2's CBOR pieces; its
        // client data hash is SHA-256 of the test's cdh (as fido2-cred -V takes it).
        let build = """
            import base64, hashlib, json, sys
            v = {e["id"]: e["hex"] for e in json.load(open(sys.argv[1]))}
            p = "libfido2/regress/cred.c/"
            # {"fmt": "tpm", "attStmt": ..., "authData": ...}: a3, then text keys and values.
            obj = bytes.fromhex("a3" + "63666d74" + "6374706d" + "6761747453746d74" + v[p + "attstmt_tpm_es256"]
                + "686175746844617461" + v[p + "authdata_tpm_es256"])
            b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
            print(json.dumps({"type": "public-key", "response": {"attestationObject": b64(obj)},
                "clientDataHash": b64(hashlib.sha256(bytes.fromhex(v[p + "cdh"])).digest())}))
            """
        let document = try CLIRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/python3"), ["-c", build, vectors.path])
        try #require(document.status == 0, "\(document.stderr)")
        let verified = try CLIRunner.run(["verify", "--registration", "-"], input: document.stdout)
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        #expect(verified.stdout.contains("ST33HTPHAHB4"), "\(verified.stdout)")
        #expect(verified.stdout.contains("EUS-STM-KEYID-1ADB994AB58BE57A0CC9B900E7851E1A43C08660"), "\(verified.stdout)")
        let json = try CLIRunner.run(["verify", "--registration", "-", "--json"], input: document.stdout)
        let trustPath = (try json.object()["registration"] as? [String: Any])?["trustPath"] as? [String]
        #expect(trustPath?.first?.contains("ST33HTPHAHB4") == true, "\(json.stdout)")
    }

    // MARK: virtual serve --pcsc

    @Test func servePCSCSaysItWaitsForVPCD() throws {
        let port = try VirtualKeyBed.freePort(type: SOCK_STREAM)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("vpcd-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let serve = try CLIRunner.start(["virtual", "serve", "--pcsc", "127.0.0.1:\(port)"], name: "serve", work: work)
        defer {
            if serve.process.isRunning { serve.process.terminate() }
            serve.process.waitUntilExit()
        }
        #expect(Self.wait { serve.stderr.contains("waiting for vpcd at 127.0.0.1:\(port)") }, "\(serve.stderr)")
        #expect(!serve.stderr.contains("connected to vpcd"))
        // A stand-in for vpcd: a TCP listener on the port, which the card then connects to.
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        listener.arguments = [
            "-c",
            "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', \(port))); s.listen(1); c, _ = s.accept(); time.sleep(10)",
        ]
        try listener.run()
        defer {
            listener.terminate()
            listener.waitUntilExit()
        }
        #expect(Self.wait { serve.stderr.contains("connected to vpcd at 127.0.0.1:\(port)") }, "\(serve.stderr)")
    }

    // MARK: Helpers

    /// Polls `condition` every 50 ms for up to 20 s.
    static func wait(_ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 20)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition()
    }

    /// The per-key members the fleet section of Docs/CLI.md lists, as CSV columns: `error`,
    /// `policy` and `attestation` under the column names the same paragraph gives them.
    static func documentedFleetColumns() throws -> [String] {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/CLI.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let start = text.range(of: "Per key (JSON member names"),
            let end = text.range(of: "The health check is", range: start.upperBound..<text.endIndex)
        else { throw CLITestError("Docs/CLI.md has no fleet member list") }
        let paragraph = text[start.lowerBound..<end.lowerBound]
        var names: [String] = []
        for (index, piece) in paragraph.components(separatedBy: "`").enumerated() where index % 2 == 1 {
            guard piece.allSatisfy({ $0.isLetter || $0.isNumber }), !piece.isEmpty else { continue }
            if ["error", "policy", "attestation", "metadata", "pass", "reasons", "code", "message"].contains(piece) {
                continue
            }
            if !names.contains(piece) { names.append(piece) }
        }
        return names
    }

    static func base64URL(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
