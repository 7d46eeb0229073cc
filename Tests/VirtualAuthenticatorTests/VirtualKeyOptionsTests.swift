import Foundation
import TestProcesses
import Testing
import Logging
import VirtualAuthenticator

/// What `virtual serve`'s flags parse to. Expected values come from outside the parser: COSE
/// numbers from IANA's "COSE Algorithms" registry, vsmartcard's vpcd default port (35963, its
/// `vpcd` README and `vpcd.h`), the CTAPHID-over-UDP port the firmware emulators use (8111,
/// SoloKeys' and OpenSK's UDP HID), and an AAGUID as FIDO MDS3 lists it.
@Suite struct VirtualKeyOptionsTests {
    @Test func algorithmsAreIANANumbersInOrder() throws {
        let list = try VirtualKeyOptions.parseAlgorithms("es256, eddsa,rs256,-37,es256k,mldsa65")
        #expect(list.map(\.rawValue) == [-7, -8, -257, -37, -47, -49])
    }

    @Test(arguments: ["es256,es256", "es256,-7", "sha1", "es256,", "-65535"])
    func refusedAlgorithmLists(_ text: String) {
        #expect(throws: VirtualKeyError.self) { try VirtualKeyOptions.parseAlgorithms(text) }
    }

    @Test func addresses() throws {
        let cases: [(String?, String, UInt16)] = [
            ("127.0.0.1:8111", "127.0.0.1", 8111), ("[::1]:35963", "[::1]", 35963), ("localhost:0", "localhost", 0),
            (nil, "127.0.0.1", 8111),
        ]
        for (text, host, port) in cases {
            let parsed = try VirtualKeyOptions.parseManyAddress(text)
            #expect(parsed.host == host && parsed.port == port)
        }
        #expect(try VirtualKeyOptions.parseAddress("[::1]:35963").host == "[::1]")
        for bad in ["8111", ":8111", "host:0", "host:65536", "host:port"] {
            #expect(throws: VirtualKeyError.self) { try VirtualKeyOptions.parseAddress(bad) }
        }
    }

    @Test func defaultTransports() throws {
        var options = VirtualKeyOptions()
        options.pcsc = true
        #expect(try options.transport(environment: [:], processID: 42) == .pcsc(vpcdHost: "127.0.0.1", vpcdPort: 35963))
        #expect(
            try options.transport(environment: ["SECURITYKEY_VPCD_HOST": "vpcd", "SECURITYKEY_VPCD_PORT": "35964"], processID: 42)
                == .pcsc(vpcdHost: "vpcd", vpcdPort: 35964))
        options.pcsc = false
        options.udp = true
        #expect(try options.transport(environment: [:], processID: 42) == .udp(host: "127.0.0.1", port: 8111))
        options.udp = false
        options.uhid = true
        #expect(try options.transport(environment: [:], processID: 42) == .uhid(serialNumber: "SKVIRTUAL-42"))
        options.serial = "a=b"
        #expect(throws: VirtualKeyError.self) { try options.transport(environment: [:], processID: 42) }
    }

    @Test func settingsFromFlags() throws {
        var options = VirtualKeyOptions()
        options.udp = true
        options.aaguid = "2fc0579f-8113-47ea-b116-bb5a8db9202a"
        options.attestation = "self"
        options.profile = "ctap21"
        options.extensions = "credProtect, hmac-secret"
        options.bioSamples = "too-high,good,timeout"
        try options.validate()
        let settings = try options.settings()
        #expect(settings.aaguid == [0x2F, 0xC0, 0x57, 0x9F, 0x81, 0x13, 0x47, 0xEA, 0xB1, 0x16, 0xBB, 0x5A, 0x8D, 0xB9, 0x20, 0x2A])
        #expect(settings.attestation == .selfAttestation)
        #expect(settings.profile == .ctap21)
        #expect(settings.extensions == ["credProtect", "hmac-secret"])
        #expect(settings.fingerprintSensor?.samples.count == 3)
    }

    /// Each refusal names the flag at fault.
    @Test(arguments: [
        ([], "Choose exactly one"), (["udp", "pcsc"], "Choose exactly one"), (["udp", "presence:sometimes"], "--presence"),
        (["udp", "profile:ctap19"], "--profile"), (["udp", "profile:ctap20", "bio"], "--bio"),
        (["udp", "ctap1Only", "pin"], "--ctap1-only"), (["udp", "count:2", "state"], "--state"),
        (["pcsc", "count:2"], "--count goes with --udp"), (["udp", "profile:ctap21-pre", "alwaysUV"], "--always-uv"),
        (["udp", "maxLargeBlob:512"], "--max-large-blob takes"), (["udp", "latency:-1"], "--latency"),
        (["udp", "profile:ctap21", "maxPINLength"], "need --profile ctap22"),
    ])
    func refusals(_ flags: [String], _ named: String) {
        var options = VirtualKeyOptions()
        for flag in flags {
            let parts = flag.split(separator: ":", maxSplits: 1).map(String.init)
            switch parts[0] {
            case "udp": options.udp = true
            case "pcsc": options.pcsc = true
            case "presence": options.presence = parts[1]
            case "profile": options.profile = parts[1]
            case "bio": options.bio = true
            case "ctap1Only": options.ctap1Only = true
            case "pin": options.pin = "1234"
            case "count": options.count = Int(parts[1]) ?? 0
            case "state": options.state = "/tmp/state"
            case "alwaysUV": options.alwaysUV = true
            case "maxLargeBlob": options.maxLargeBlob = Int(parts[1])
            case "latency": options.latency = Int(parts[1])
            case "maxPINLength": options.ctap22.maxPINLength = 8
            default: Issue.record("unknown flag \(flag)")
            }
        }
        do {
            try options.validate()
            Issue.record("\(flags) accepted")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains(named), "\(error.message)")
        }
    }

    /// `--attestation-key` and `--attestation-certificate`: an openssl-made key and chain become
    /// the key's attestation identity (the whole chain in x5c, room for it in maxMsgSize); a
    /// certificate that does not hold the key, half of the pair, or another attestation kind
    /// are refused.
    @Test func importedAttestationIdentity() async throws {
        let pki = try await TestProcess.onThread { () throws -> TestPKI in
            let pki = try TestPKI()
            try pki.certificate("ca", subject: "/CN=Test CA", issuer: nil, isCA: true, serial: "10")
            try pki.certificate(
                "leaf", subject: "/C=US/O=Test/OU=Authenticator Attestation/CN=Test Key", issuer: "ca",
                isCA: false, serial: "11")
            return pki
        }
        let chain = pki.directory.appendingPathComponent("chain.pem")
        try Data(try pki.bytes("leaf.pem") + pki.bytes("ca.pem")).write(to: chain)
        var options = VirtualKeyOptions()
        options.udp = true
        options.profile = "ctap21"
        options.attestationKey = pki.path("leaf.key")
        options.attestationCertificate = chain.path
        try options.validate()
        let settings = try options.settings()
        let identity = try #require(settings.attestationIdentity)
        #expect(identity.certificates == [try pki.bytes("leaf.der"), try pki.bytes("ca.der")])
        let chainBytes = identity.certificates.reduce(0) { $0 + $1.count }
        #expect(settings.configuration.maxMsgSize >= chainBytes + 1024)
        let key = try VirtualKey(configuration: settings.configuration)
        #expect(key.attestationCertificateChainDER == identity.certificates)
        #expect(key.attestationCertificateDER == (try pki.bytes("leaf.der")))
        #expect(key.attestationRootCertificateDER == (try pki.bytes("ca.der")))

        var mismatched = options
        mismatched.attestationKey = pki.path("ca.key")
        #expect { try mismatched.settings() } throws: { error in
            (error as? VirtualKeyError)?.message.contains("does not hold the attestation key") == true
        }
        var half = options
        half.attestationCertificate = nil
        #expect(throws: VirtualKeyError.self) { try half.validate() }
        var other = options
        other.attestation = "self"
        #expect(throws: VirtualKeyError.self) { try other.validate() }
    }

    /// `--fault` takes the names `VirtualKeyFault` lists (the spellings Docs/CLI.md gives).
    @Test func faults() throws {
        var options = VirtualKeyOptions()
        options.udp = true
        options.fault = "silent-after-init"
        try options.validate()
        options.fault = "silent-after-ack"
        #expect { try options.validate() } throws: { error in
            (error as? VirtualKeyError)?.message
                == "--fault takes silent-after-select or silent-after-init, not \"silent-after-ack\"."
        }
    }

    /// A secrets log only when the environment says SECURITYKEY_ALLOW_SECRETS_LOG=1.
    @Test func secretsLogNeedsConsent() throws {
        var options = VirtualKeyOptions()
        options.udp = true
        try options.checkSecretsLog(environment: [:])
        options.secretsLog = "/tmp/secrets"
        #expect(throws: VirtualKeyError.self) { try options.checkSecretsLog(environment: [:]) }
        #expect(throws: VirtualKeyError.self) {
            try options.checkSecretsLog(environment: ["SECURITYKEY_ALLOW_SECRETS_LOG": "yes"])
        }
        try options.checkSecretsLog(environment: ["SECURITYKEY_ALLOW_SECRETS_LOG": "1"])
    }

    /// The server the flags describe: `--count` keys on consecutive ports, each answering
    /// built-in verification as `--fingerprint` says; the vpcd address a card goes to.
    @Test func serverFromFlags() async throws {
        var options = VirtualKeyOptions()
        options.udp = true
        options.address = "127.0.0.1:0"
        options.count = 2
        options.bio = true
        options.ctap22.fingerprint = "mismatch"
        try options.validate()
        let transport = try options.transport(environment: [:], processID: 42)
        #expect(transport == .udp(host: "127.0.0.1", port: 0))
        #expect(transport.vpcdAddress == "")
        let server = try await options.server(
            transport: transport, settings: try options.settings(), logger: Logger(label: "test"))
        #expect(server.keys.count == 2)
        #expect(server.ports.count == 2 && !server.ports.contains(0))
        for key in server.keys { #expect(await key.userVerification == .mismatch) }
        #expect(VirtualKeyTransport.pcsc(vpcdHost: "vpcd", vpcdPort: 35963).vpcdAddress == "vpcd:35963")
    }
}
