import Authenticators
import Logging
import Transport

/// One `pam_sm_authenticate` call: the options, the user, and the credentials listed for them.
///
/// ``prepare(arguments:userName:log:)`` does what must happen on the application's thread and
/// with the user's file identity (reading the authorization file); ``run(conversation:logger:)``
/// finds the key and performs the assertion, within ``PAMModuleOptions/timeout``.
public struct PAMAuthentication: Sendable {
    /// The PAM line's options.
    public var options: PAMModuleOptions
    /// The user authenticating.
    public var user: PAMUser
    /// The credentials listed for the user, in the file's order.
    public var credentials: [PAMCredential]
    /// The relying-party ID the assertion is asked for.
    public var relyingPartyID: String
    /// Where keys are searched: USB, PC/SC and the line's CTAPHID/UDP endpoints.
    public var directory: AuthenticatorDirectory

    /// What ``prepare(arguments:userName:log:)`` decided.
    public enum Preparation: Sendable {
        /// The module's answer, without touching a key (a refused option or file, no credential).
        case finished(PAMResult)
        /// A key must be asked.
        case authenticate(PAMAuthentication)
    }

    /// The default authorization file of a user: `$XDG_CONFIG_HOME/Yubico/u2f_keys` (the
    /// variable read with secure_getenv, as pam-u2f does), else `~/.config/Yubico/u2f_keys`;
    /// `~/.ssh/id_ecdsa_sk` with `sshformat`.
    public static func defaultAuthFile(for user: PAMUser, sshFormat: Bool) -> String {
        if sshFormat { return user.home + "/.ssh/id_ecdsa_sk" }
        if let config = PAMSystem.secureEnvironment("XDG_CONFIG_HOME"), config.hasPrefix("/") {
            return config + "/Yubico/u2f_keys"
        }
        return user.home + "/.config/Yubico/u2f_keys"
    }

    /// Parses the options, looks the user up and reads their credentials. Refusals are logged
    /// to `log` (which the caller made from the same options, or a default one).
    public static func prepare(options: PAMModuleOptions, userName: String?, log: PAMLog) -> Preparation {
        let logger = log.logger
        guard let userName, !userName.isEmpty else {
            log.refusal("The application gave no user name.")
            return .finished(.userUnknown)
        }
        guard let user = PAMUser.named(userName) else {
            logger.debug("no such user", metadata: ["user": "\(userName)"])
            return .finished(options.noUserOK ? .ignore : .userUnknown)
        }
        // The file: central (absolute, read as root unless openasuser) or the user's own.
        let path: String
        let asUser: Bool
        switch options.authFile {
        case let file? where file.hasPrefix("/"): (path, asUser) = (file, options.openAsUser)
        case let file?: (path, asUser) = (user.home + "/" + file, true)
        case nil: (path, asUser) = (defaultAuthFile(for: user, sshFormat: options.sshFormat), true)
        }
        logger.debug("reading the authorization file", metadata: ["file": "\(path)", "as-user": "\(asUser)"])
        let bytes: [UInt8]?
        do throws(PAMFailure) {
            bytes = try SecureFile.read(path, user: user, asUser: asUser)
        } catch {
            log.refusal(error.message)
            return .finished(error.result)
        }
        var credentials: [PAMCredential]?
        var application: String?
        do throws(PAMFailure) {
            if let bytes, options.sshFormat {
                let key = try SSHKeyFile.credential(in: bytes)
                credentials = [key.credential]
                application = key.application
            } else if let bytes {
                credentials = try AuthorizationFile.credentials(for: userName, in: bytes, maxDevices: options.maxDevices)
            }
        } catch {
            log.refusal("The authorization file \(path) is refused: \(error.message).")
            return .finished(error.result)
        }
        guard let credentials, !credentials.isEmpty else {
            logger.debug("no credential listed", metadata: ["user": "\(userName)", "file": "\(path)"])
            return .finished(options.noUserOK ? .ignore : .userUnknown)
        }
        // Our own settings from the environment only when the line allows it, and never in a
        // privileged program (secure_getenv).
        var udp = options.udpEndpoints
        if options.honoursEnvironment, let value = PAMSystem.secureEnvironment(AuthenticatorDirectory.udpEnvironmentVariable) {
            udp.append(value)
        }
        let directory: AuthenticatorDirectory
        do throws(AuthenticatorError) {
            directory = .system(
                udpEndpoints: try AuthenticatorDirectory.udpEndpoints(options: udp, environment: [:]), logger: logger)
        } catch {
            log.refusal("The PAM option udp= is refused: \(error.message)")
            return .finished(.serviceError)
        }
        guard let hostName = PAMSystem.hostName() ?? (options.origin == nil ? nil : "") else {
            log.refusal("The host name, needed for the default origin pam://HOST, cannot be read.")
            return .finished(.systemError)
        }
        let relyingPartyID = options.origin ?? application ?? options.relyingPartyID(hostName: hostName)
        logger.debug(
            "credentials listed",
            metadata: ["user": "\(userName)", "count": "\(credentials.count)", "origin": "\(relyingPartyID)"])
        return .authenticate(
            PAMAuthentication(
                options: options, user: user, credentials: credentials, relyingPartyID: relyingPartyID,
                directory: directory))
    }
}
