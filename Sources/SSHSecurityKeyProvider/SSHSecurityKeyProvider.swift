import Authenticators
import CTAP2
import Crypto
import Logging
import Transport

/// OpenSSH's security-key middleware (PROTOCOL.u2f, `sk-api.h`, API version 0x000a0000) on the
/// device layer: enrolment, signing and the listing of resident keys, with the semantics of
/// OpenSSH's built-in provider (`sk-usbhid.c`) so that key files made by either work with the
/// other, over every key `Authenticators` reaches (hidraw, PC/SC readers, CTAPHID over UDP).
///
/// Each call runs on one ``Transport/Deadline`` made from ``timeout``. A PIN is used at most
/// once per call: a wrong PIN ends the call with ``SSHSecurityKeyError/Code/pinRequired`` and
/// the attempts left reported, and OpenSSH asks the user whether to try again.
public struct SSHSecurityKeyProvider: Sendable {
    /// The API version this provider implements (`SSH_SK_VERSION_MAJOR` of OpenSSH 8.9 and later).
    public static let apiVersion: UInt32 = 0x000a_0000

    /// Where keys are found.
    public var directory: AuthenticatorDirectory
    /// How long one call may take, touches and PIN checks included.
    public var timeout: Duration
    /// Where the provider logs (never a PIN).
    public var logger: Logger
    /// Tells the user one sentence (OpenSSH's helper shows its standard error).
    public var report: @Sendable (String) -> Void

    /// The default ``timeout``: long enough for a touch, bounded so that nothing hangs.
    public static let defaultTimeout: Duration = .seconds(30)

    /// A provider over `directory`.
    public init(
        directory: AuthenticatorDirectory, timeout: Duration = Self.defaultTimeout,
        logger: Logger = Logger(label: "securitykey.ssh"), report: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.directory = directory
        self.timeout = timeout
        self.logger = logger
        self.report = report
    }

    /// A provider over this machine's keys: USB HID, PC/SC readers and the CTAPHID/UDP
    /// endpoints of `SECURITYKEY_UDP` in `environment` (OpenSSH passes no device when signing,
    /// so configured endpoints must be found by listing).
    public static func system(
        environment: [String: String], logger: Logger, report: @escaping @Sendable (String) -> Void
    ) throws(SSHSecurityKeyError) -> SSHSecurityKeyProvider {
        do throws(AuthenticatorError) {
            let endpoints = try AuthenticatorDirectory.udpEndpoints(options: [], environment: environment)
            return SSHSecurityKeyProvider(
                directory: .system(udpEndpoints: endpoints, logger: logger), logger: logger, report: report)
        } catch {
            throw SSHSecurityKeyError(.general, error.message, underlying: error)
        }
    }

    // MARK: Finding the key

    /// The key named by `device`; else the only key present; else, among several, the one the
    /// user touches (all blink). No key present is ``SSHSecurityKeyError/Code/deviceNotFound``
    /// at once, not a wait.
    func chooseKey(device: String?, deadline: Deadline) async throws(SSHSecurityKeyError) -> Authenticator {
        if let device { return try await open(device, deadline: deadline) }
        let present = try await presentKeys(deadline: deadline)
        if present.count == 1, let only = present.first { return only }
        for key in present { await key.close() }
        logger.debug("several keys: touch one", metadata: ["count": "\(present.count)"])
        do throws(AuthenticatorError) {
            return try await directory.chooseAuthenticator(deadline: deadline)
        } catch {
            throw SSHSecurityKeyError(error)
        }
    }

    /// The key named by a `device` option.
    func open(_ device: String, deadline: Deadline) async throws(SSHSecurityKeyError) -> Authenticator {
        do throws(AuthenticatorError) {
            return try await directory.open(uri: device, deadline: deadline)
        } catch {
            throw SSHSecurityKeyError(
                .deviceNotFound, "The security key \(device) cannot be opened: \(error.message)", underlying: error)
        }
    }

    /// Every key present now, open; none is ``SSHSecurityKeyError/Code/deviceNotFound``.
    func presentKeys(deadline: Deadline) async throws(SSHSecurityKeyError) -> [Authenticator] {
        do throws(AuthenticatorError) {
            return try await directory.openPresent(deadline: deadline)
        } catch where error.code == .permissionDenied {
            throw SSHSecurityKeyError(
                .deviceNotFound, "A security key is present but this user may not open it: \(error.message)",
                underlying: error)
        } catch {
            throw SSHSecurityKeyError(
                .deviceNotFound,
                "No security key found (searched USB, PC/SC readers and the UDP endpoints of \(AuthenticatorDirectory.udpEnvironmentVariable)).")
        }
    }

    /// The key that holds `keyHandle` for `application`, found with silent probes (getAssertion
    /// with up=false, which no key answers with a touch) before anything asks the user.
    func findKey(holding keyHandle: [UInt8], application: String, deadline: Deadline)
        async throws(SSHSecurityKeyError) -> Authenticator
    {
        let present = try await presentKeys(deadline: deadline)
        var found: Authenticator?
        for key in present {
            if found == nil, await Self.holds(key, keyHandle: keyHandle, application: application, deadline: deadline) {
                found = key
            } else {
                await key.close()
            }
        }
        guard let found else {
            throw SSHSecurityKeyError(
                .deviceNotFound,
                present.count == 1
                    ? "The security key present does not hold this SSH key."
                    : "None of the \(present.count) security keys present holds this SSH key.")
        }
        return found
    }

    /// Whether `key` holds the credential, asked without a touch.
    static func holds(_ key: Authenticator, keyHandle: [UInt8], application: String, deadline: Deadline) async -> Bool {
        await key.holdsCredential(keyHandle, rpID: application, deadline: deadline)
    }

    // MARK: Shared pieces

    /// The client data hash OpenSSH's provider sends: SHA-256 of the challenge or message
    /// OpenSSH passes (API 10 leaves the hashing to the middleware).
    static func clientDataHash(_ data: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: data)) }

    /// Runs `body` on `key` as one ceremony and closes the key, whatever happened; a wrong PIN
    /// the user gave is reported with the attempts left.
    func using<T: Sendable>(
        _ key: Authenticator, pin: OneAttemptPIN, _ body: () async throws(SSHSecurityKeyError) -> T
    ) async throws(SSHSecurityKeyError) -> T {
        let result: Result<T, SSHSecurityKeyError>
        do throws(SSHSecurityKeyError) {
            result = .success(try await Authenticator.withCeremony(on: key, body))
        } catch {
            result = .failure(pin.explain(error))
        }
        await key.close()
        if case .failure(let error) = result, error.code != .credentialExists {
            logger.debug("failed", metadata: ["device": "\(key.uri)", "code": "\(error.code)"])
        }
        return try result.get()
    }

    /// A token for `permissions` on `rpID` from the PIN the caller gave, or the `uv` option of
    /// a key with built-in verification; no PIN and no built-in verification is `pinRequired`.
    func verification(
        on key: Authenticator, pin: OneAttemptPIN, permissions: PINUVAuthTokenPermissions, rpID: String,
        deadline: Deadline
    ) async throws(SSHSecurityKeyError) -> UserVerification {
        do throws(AuthenticatorError) {
            if pin.isGiven {
                return .token(try await key.pinToken(
                    permissions: permissions, rpID: rpID, interaction: pin, deadline: deadline))
            }
            if await key.info.isEnabled(.userVerification) {
                return try await key.verifyUser(permissions: permissions, rpID: rpID, interaction: nil, deadline: deadline)
            }
        } catch {
            throw SSHSecurityKeyError(error)
        }
        throw SSHSecurityKeyError(.pinRequired, "The security key needs its PIN for this.")
    }
}
