import _SecurityKeyInternals
import Testing

/// The one reading of on/off variables such as SECURITYKEY_TRACE, which the CLI's help, the
/// provider's man page and pam_securitykey(8) describe as "set to 1"; "0" and the empty string
/// (a variable exported empty to switch it off) leave it off.
@Suite struct EnvironmentSwitchTests {
    @Test(arguments: [("1", true), ("yes", true), ("2", true), ("0", false), ("", false)])
    func values(value: String, on: Bool) {
        #expect(EnvironmentSwitch.isOn(value) == on)
    }

    @Test func unsetIsOff() {
        #expect(!EnvironmentSwitch.isOn(nil))
        #expect(EnvironmentSwitch.trace == "SECURITYKEY_TRACE")
    }
}
