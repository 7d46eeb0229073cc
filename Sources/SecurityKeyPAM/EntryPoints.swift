import CPAM
import PAMSecurityKey

// Linux-PAM's service-module interface (pam_sm_authenticate(3), pam_sm_setcred(3)): thin shims
// that convert the C arguments, call PAMSecurityKey and return its PAM code. No Swift error
// leaves these functions, and the application's conversation is only ever called on the
// application's own thread (ModuleCall).

/// Authenticates the PAM user with a security key listed in pam-u2f's files.
@_cdecl("pam_sm_authenticate")
public func pamSMAuthenticate(
    _ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let handle else { return PAMResult.serviceError.rawValue }
    return ModuleCall.authenticate(
        handle: handle, silent: flags & Int32(bitPattern: UInt32(PAM_SILENT)) != 0,
        arguments: CArguments.strings(argv, count: argc)
    ).rawValue
}

/// Nothing to set: a security key grants no credential (pam-u2f answers the same).
@_cdecl("pam_sm_setcred")
public func pamSMSetcred(
    _ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    PAMResult.success.rawValue
}
