/// The PAM line's arguments as strings.
enum CArguments {
    /// More words than a PAM line ever holds is not a list to walk.
    static let maximumArguments = 256

    /// `argv[0..<argc]`, skipping null entries.
    static func strings(_ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?, count: Int32) -> [String] {
        guard let argv, count > 0 else { return [] }
        return (0..<min(Int(count), maximumArguments)).compactMap { argv[$0].map { String(cString: $0) } }
    }
}
