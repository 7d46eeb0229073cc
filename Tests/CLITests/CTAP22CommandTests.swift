import Foundation
import Testing

/// The CTAP 2.2 features through the CLI, against `virtual serve --udp` (the default ctap22
/// profile): PIN complexity refusals, maxPINLength and the policy in `info`/`pin status`,
/// `register --payment` shown by `credentials list`, `register --attestation-format`, and
/// `reset`'s guidance from longTouchForReset/transportsForReset.
@Suite(.serialized) struct CTAP22CommandTests {
    static let pin = "24681357"

    /// Serves a ctap22 key with `arguments` on a fresh port while `body` runs with its device URI.
    func withKey(_ arguments: [String], _ body: (String) throws -> Void) throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let served = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)"] + arguments) {
            CLIRunner.waitUntilServed(device)
            try body(device)
        }
        #expect(served.status == 0)
    }

    @Test func theDefaultProfileIsCTAP22AndOlderOnesStaySelectable() throws {
        try withKey([]) { device in
            let info = try CLIRunner.run(["info", "--json", "--device", device]).object()
            #expect(info["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_2", "FIDO_2_3"])
            #expect(info["maxPINLength"] as? Int == 63)
            #expect(info["pinComplexityPolicy"] as? Bool == false)
            #expect(info["attestationFormats"] as? [String] == ["packed", "none"])
            #expect(info["authenticatorConfigCommands"] as? [Int] == [1, 2, 3])
            #expect((info["extensions"] as? [String])?.contains("thirdPartyPayment") == true)
        }
        try withKey(["--profile", "ctap20"]) { device in
            let info = try CLIRunner.run(["info", "--json", "--device", device]).object()
            #expect(info["versions"] as? [String] == ["U2F_V2", "FIDO_2_0"])
            #expect(info["maxPINLength"] == nil || info["maxPINLength"] is NSNull)
        }
        let refused = try CLIRunner.run(["virtual", "serve", "--udp", "127.0.0.1:1", "--profile", "ctap21", "--pin-complexity"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("need --profile ctap22"))
    }

    @Test func aPINTheComplexityPolicyRefusesSaysWhyAndCostsNothing() throws {
        try withKey(["--pin-complexity", "--pin-complexity-url", "https://example.com/pin-policy", "--max-pin-length", "12"]) { device in
            let status = try CLIRunner.run(["pin", "status", "--json", "--device", device]).object()
            #expect(status["pinComplexityPolicy"] as? Bool == true)
            #expect(status["maxPINLength"] as? Int == 12)
            let plain = try CLIRunner.run(["pin", "status", "--device", device])
            #expect(plain.stdout.contains("A PIN has 4 to 12 characters."))
            #expect(plain.stdout.contains("PIN complexity policy (https://example.com/pin-policy)"))

            let easy = try CLIRunner.run(["pin", "set", "--pin-stdin", "--device", device], input: "123456\n")
            #expect(easy.status == 5, "\(easy.stderr)")
            #expect(
                easy.stderr.contains(
                    "The key refused the new PIN as too easy to guess under its PIN complexity policy (https://example.com/pin-policy); choose a less predictable PIN."
                ), "\(easy.stderr)")
            let json = try CLIRunner.run(["pin", "set", "--pin-stdin", "--json", "--device", device], input: "1111\n")
            #expect(json.status == 5)
            #expect(((try? json.object())?["error"] as? [String: Any])?["code"] as? String == "pin-policy-violation")
            // The host's own check: longer than maxPINLength never reaches the key.
            let long = try CLIRunner.run(["pin", "set", "--pin-stdin", "--device", device], input: "2468135792468\n")
            #expect(long.status == 5)
            #expect(long.stderr.contains("at most 12 characters"), "\(long.stderr)")
            let set = try CLIRunner.run(["pin", "set", "--pin-stdin", "--device", device], input: Self.pin + "\n")
            #expect(set.status == 0, "\(set.stderr)")
            let after = try CLIRunner.run(["pin", "status", "--json", "--device", device]).object()
            #expect(after["pinRetries"] as? Int == 8, "refused PINs cost no attempt")
        }
    }

    @Test func registerPaymentIsListedAndAttestationFormatIsAskedFor() throws {
        try withKey(["--pin", Self.pin]) { device in
            let pay = try CLIRunner.run(
                ["register", "--device", device, "--rp", "example.org", "--user", "payer", "--resident", "--payment",
                 "--pin-stdin", "--json"], input: Self.pin + "\n")
            try #require(pay.status == 0, "\(pay.stderr)")
            #expect(try pay.object()["attestationFormat"] as? String == "packed")
            let plain = try CLIRunner.run(
                ["register", "--device", device, "--rp", "example.org", "--user", "plain", "--resident",
                 "--attestation-format", "none", "--attestation-format", "packed", "--pin-stdin", "--json"],
                input: Self.pin + "\n")
            try #require(plain.status == 0, "\(plain.stderr)")
            #expect(try plain.object()["attestationFormat"] as? String == "none")

            let list = try CLIRunner.run(
                ["credentials", "list", "--device", device, "--pin-stdin", "--json"], input: Self.pin + "\n")
            try #require(list.status == 0, "\(list.stderr)")
            let credentials = try #require(try list.json() as? [[String: Any]])
            var byUser: [String: Bool] = [:]
            for credential in credentials {
                if let name = credential["userName"] as? String { byUser[name] = credential["thirdPartyPayment"] as? Bool }
            }
            #expect(byUser == ["payer": true, "plain": false])
            let text = try CLIRunner.run(["credentials", "list", "--device", device, "--pin-stdin"], input: Self.pin + "\n")
            let payerLine = text.stdout.split(separator: "\n").first { $0.contains("payer") } ?? ""
            #expect(payerLine.hasSuffix("thirdPartyPayment"), "\(text.stdout)")
        }
    }

    @Test func resetGuidanceSaysHoldAndWhichTransport() throws {
        try withKey(["--long-touch-reset", "--reset-transports", "usb"]) { device in
            let info = try CLIRunner.run(["info", "--device", device])
            #expect(info.stdout.contains("Reset:           touch and hold the key for several seconds, connected over USB only"))
            // UDP is no USB transport the key could refuse: the reset goes ahead after the guidance.
            let reset = try CLIRunner.run(["reset", "--yes", "--device", device])
            #expect(reset.status == 0, "\(reset.stderr)")
            #expect(
                reset.stderr.contains("To reset this key: touch and hold the key for several seconds, connected over USB only."),
                "\(reset.stderr)")
        }
    }
    @Test func failingBuiltInUVIsTriedAsOftenAsTheKeyPrefersThenThePINAndABlockedSensorGoesStraightToThePIN() throws {
        try withKey(["--pin", Self.pin, "--bio", "--uv-attempts", "2", "--fingerprint", "mismatch"]) { device in
            let enroll = try CLIRunner.run(["bio", "enroll", "--device", device, "--pin-stdin", "--json"], input: Self.pin + "\n")
            try #require(enroll.status == 0, "\(enroll.stderr)")
            let info = try CLIRunner.run(["info", "--json", "--device", device]).object()
            #expect(info["preferredPlatformUvAttempts"] as? Int == 2)
            #expect((info["options"] as? [String: Bool])?["uv"] == true)
            // Each registration: two failed fingers (2 of the key's 8 uvRetries, as the key's own
            // counter shows), then the PIN from standard input.
            for round in 1...4 {
                let register = try CLIRunner.run(
                    ["register", "--device", device, "--rp", "example.org", "--user", "u\(round)", "--uv", "--pin-stdin",
                     "--json"], input: Self.pin + "\n")
                try #require(register.status == 0, "\(register.stderr)")
                let status = try CLIRunner.run(["pin", "status", "--json", "--device", device]).object()
                #expect(status["uvRetries"] as? Int == 8 - 2 * round)
            }
            // Blocked now (CTAP2_ERR_UV_BLOCKED): the PIN at once.
            let blocked = try CLIRunner.run(
                ["register", "--device", device, "--rp", "example.org", "--user", "u5", "--uv", "--pin-stdin", "--json"],
                input: Self.pin + "\n")
            #expect(blocked.status == 0, "\(blocked.stderr)")
            let status = try CLIRunner.run(["pin", "status", "--json", "--device", device]).object()
            #expect(status["uvRetries"] as? Int == 0)
            #expect(status["pinRetries"] as? Int == 8, "the PIN path spent no attempt")
        }
    }
}
