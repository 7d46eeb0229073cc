import _SecurityKeyInternals

/// The arguments of a `pam_securitykey.so` line: pam-u2f's options with pam-u2f's meaning
/// (pam_u2f(8)), and this module's own few. An option this module does not implement is
/// refused, naming it, rather than silently doing something else than pam-u2f would.
public struct PAMModuleOptions: Hashable, Sendable {
    /// A tri-state of pam-u2f's `userpresence=`, `userverification=`, `pinverification=`:
    /// 1 asks for it, 0 asks the key not to, anything else leaves it to the key.
    public enum Requirement: Hashable, Sendable {
        case required, discouraged, keyDefault

        init(_ text: Substring) {
            switch Int(text) {
            case 1: self = .required
            case 0: self = .discouraged
            default: self = .keyDefault
            }
        }
    }

    /// Where `debug` output goes (`debug_file=`): standard error (pam-u2f's default),
    /// standard output, syslog, or an existing regular file.
    public enum DebugDestination: Hashable, Sendable {
        case standardError, standardOutput, syslog, file(String)
    }

    /// `debug`: log what the module does (never a PIN).
    public var debug = false
    /// `trace` (ours): also log every frame exchanged with the key (implies `debug`).
    public var trace = false
    /// `debug_file=`.
    public var debugDestination = DebugDestination.standardError
    /// `origin=`: the relying-party ID; default `pam://HOSTNAME` (`ssh:` with `sshformat`).
    public var origin: String?
    /// `appid=`: accepted for pam-u2f's sake; as in pam-u2f's FIDO2 path, only `origin` is sent.
    public var appID: String?
    /// `authfile=`: absolute (a central file, read as root) or relative to the user's home.
    public var authFile: String?
    /// `sshformat`: the file is an OpenSSH security-key private key (`~/.ssh/id_ecdsa_sk`).
    public var sshFormat = false
    /// `openasuser`: read a central file with the user's identity too.
    public var openAsUser = false
    /// `nouserok`: a user with no credential listed is `PAM_IGNORE`, not `PAM_USER_UNKNOWN`.
    public var noUserOK = false
    /// `cue`: tell the user to touch the key.
    public var cue = false
    /// `cue_prompt=`.
    public var cuePrompt: String?
    /// `interactive`: ask the user to insert the key and press Enter first.
    public var interactive = false
    /// `prompt=` of `interactive`.
    public var prompt: String?
    /// `userpresence=`.
    public var userPresence = Requirement.keyDefault
    /// `userverification=`.
    public var userVerification = Requirement.keyDefault
    /// `pinverification=`.
    public var pinVerification = Requirement.keyDefault
    /// `max_devices=`: credentials per user beyond this are ignored (pam-u2f's default 24).
    public var maxDevices = 24
    /// `nodetect`: skip the silent search for the key holding a credential.
    public var noDetect = false
    /// `authpending_file=`: opened while a touch is awaited; empty disables;
    /// default `/var/run/user/UID/pam-u2f-authpending`.
    public var authPendingFile: String?
    /// `udp=HOST:PORT,...` (ours): CTAPHID-over-UDP keys to search (virtual keys in tests).
    public var udpEndpoints: [String] = []
    /// `timeout=SECONDS` (ours): the bound on the whole authentication, touch included.
    public var timeout: Duration = .seconds(60)
    /// `environment` (ours): honour `SECURITYKEY_UDP` and `SECURITYKEY_TRACE`, read with
    /// secure_getenv (so never in a setuid or otherwise privileged program).
    public var honoursEnvironment = false

    /// The longest `timeout=`.
    public static let maximumTimeout = 600
    /// The most credentials `max_devices=` may ask for.
    public static let maximumDevices = 256

    /// Default options.
    public init() {}

    /// The options of `arguments` (the PAM line's words after the module path); an option
    /// this module does not implement, or a malformed value, is a refusal naming it.
    public init(arguments: [String]) throws(PAMFailure) {
        self.init()
        for argument in arguments {
            let (name, value) = Self.split(argument)
            switch (name, value) {
            case ("debug", nil): debug = true
            case ("trace", nil):
                debug = true
                trace = true
            case ("debug_file", let file?):
                switch file {
                case "stderr": debugDestination = .standardError
                case "stdout": debugDestination = .standardOutput
                case "syslog": debugDestination = .syslog
                default:
                    guard file.hasPrefix("/") else { throw Self.refused(argument, "needs an absolute path") }
                    debugDestination = .file(String(file))
                }
            case ("origin", let text?): origin = try Self.nonEmpty(text, argument)
            case ("appid", let text?): appID = try Self.nonEmpty(text, argument)
            case ("authfile", let text?): authFile = try Self.nonEmpty(text, argument)
            case ("sshformat", nil): sshFormat = true
            case ("openasuser", nil): openAsUser = true
            case ("nouserok", nil): noUserOK = true
            case ("cue", nil): cue = true
            case ("cue_prompt", let text?): cuePrompt = String(text)
            case ("interactive", nil): interactive = true
            case ("prompt", let text?): prompt = String(text)
            case ("userpresence", let text?): userPresence = Requirement(text)
            case ("userverification", let text?): userVerification = Requirement(text)
            case ("pinverification", let text?): pinVerification = Requirement(text)
            case ("max_devices", let text?):
                guard let count = Int(text), count >= 0 else { throw Self.refused(argument, "is not a count") }
                // pam-u2f reads 0 as its default.
                maxDevices = count == 0 ? 24 : min(count, Self.maximumDevices)
            case ("nodetect", nil): noDetect = true
            case ("authpending_file", let text?): authPendingFile = String(text)
            case ("udp", let text?):
                udpEndpoints += text.split(separator: ",").map(String.init)
            case ("timeout", let text?):
                guard let seconds = Int(text), (1...Self.maximumTimeout).contains(seconds) else {
                    throw Self.refused(argument, "is not a number of seconds from 1 to \(Self.maximumTimeout)")
                }
                timeout = .seconds(seconds)
            case ("environment", nil): honoursEnvironment = true
            case ("manual", nil), ("alwaysok", nil):
                throw Self.refused(argument, "is a pam-u2f option this module does not implement")
            default:
                throw Self.refused(argument, "is not an option of this module")
            }
        }
    }

    /// The relying-party ID the credentials were made for: `origin=`, else `ssh:` for OpenSSH
    /// keys, else `pam://` and `hostName`.
    public func relyingPartyID(hostName: String) -> String {
        if let origin { return origin }
        return sshFormat ? "ssh:" : "pam://\(hostName)"
    }

    private static func split(_ argument: String) -> (Substring, Substring?) {
        guard let equals = argument.firstIndex(of: "=") else { return (Substring(argument), nil) }
        return (argument[..<equals], argument[argument.index(after: equals)...])
    }

    private static func nonEmpty(_ text: Substring, _ argument: String) throws(PAMFailure) -> String {
        guard !text.isEmpty else { throw refused(argument, "needs a value") }
        return String(text)
    }

    private static func refused(_ argument: String, _ why: String) -> PAMFailure {
        PAMFailure(.serviceError, "The PAM option \"\(argument)\" \(why); refusing to authenticate.")
    }
}

extension PAMModuleOptions {
    /// The variable that turns the wire trace on, honoured only with `environment`.
    public static let traceEnvironmentVariable = EnvironmentSwitch.trace

    /// The options of the PAM line `arguments`, with `SECURITYKEY_TRACE` applied when the line
    /// says `environment` and the process is not privileged (secure_getenv).
    public static func fromLine(_ arguments: [String]) throws(PAMFailure) -> PAMModuleOptions {
        var options = try PAMModuleOptions(arguments: arguments)
        if options.honoursEnvironment, EnvironmentSwitch.isOn(PAMSystem.secureEnvironment(traceEnvironmentVariable)) {
            options.debug = true
            options.trace = true
        }
        return options
    }
}
