internal import CSystemExtensions
import Glibc

/// The shared library code of ours runs in, when a host program dlopen()ed it (OpenSSH's
/// provider, the PAM module).
public enum LoadedLibrary {
    /// Keeps the library holding `address` loaded for the life of the process: the host
    /// dlclose()s it after a call, while threads of the concurrency runtime (linked into it) may
    /// still be finishing in its code. A reference that is never released, taken with
    /// RTLD_NODELETE, makes every dlclose() leave it in place. Nothing happens in a program
    /// that is not a library.
    public static func pin(containing address: UnsafeRawPointer) {
        var info = securitykey_dl_info()
        guard securitykey_dladdr(address, &info) != 0, let file = info.dli_fname else { return }
        _ = dlopen(file, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)
    }
}
