extension StringProtocol {
    /// The text without leading and trailing whitespace (newlines too, unless `newlines` is
    /// false): Foundation's `trimmingCharacters(in:)` with `.whitespacesAndNewlines` or
    /// `.whitespaces`, which FoundationEssentials does not have.
    public func trimmingWhitespace(newlines: Bool = true) -> String {
        let isTrimmed: (Character) -> Bool = { $0.isWhitespace && (newlines || !$0.isNewline) }
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        return String(self[first...last])
    }
}
