/// This package's version, written in this one place: `securitykey --version`,
/// `securitykeyd --version` and the Debian package (`make deb`) report it, and the release is the
/// git tag of the same name.
public enum SecurityKeyPackage {
    /// The version, `MAJOR.MINOR.PATCH` as semantic versioning orders it; the release tag is this
    /// string without a `v` (SwiftPM resolves `from:` requirements against such tags), and
    /// CHANGELOG.md has a section headed with it.
    public static let version = "0.3.0"
}
