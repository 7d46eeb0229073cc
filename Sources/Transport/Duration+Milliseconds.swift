extension Duration {
    /// The whole milliseconds of a wait, at least 0: what `poll`, `hid_read_timeout` and
    /// `SCardGetStatusChange` take. Callers clamp it to their C integer type.
    public var wholeMilliseconds: Int64 {
        max(0, components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000)
    }
}
