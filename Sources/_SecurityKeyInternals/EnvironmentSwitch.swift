/// An on/off environment variable, read one way by every program and library here: on when it
/// is set to anything but the empty string and "0" (`SECURITYKEY_TRACE=1`, `SSH_SK_HELPER_DEBUG`).
/// Where the value comes from is the caller's: the CLI reads its environment, the PAM module
/// only through secure_getenv.
public enum EnvironmentSwitch {
    /// The switch that turns the wire trace on (every CTAPHID packet, APDU and CBOR message).
    public static let trace = "SECURITYKEY_TRACE"

    /// Whether a variable's value turns its switch on; nil (unset) does not.
    public static func isOn(_ value: String?) -> Bool {
        guard let value else { return false }
        return !value.isEmpty && value != "0"
    }
}
