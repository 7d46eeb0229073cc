internal import CSystemExtensions

/// glibc's malloc statistics, for memory regression tests and benchmarks: RSS alone cannot
/// tell freed memory that malloc keeps from memory still in use.
public enum HeapStatistics {
    /// Bytes allocated with malloc and not yet freed, over every arena (`mallinfo2().uordblks`).
    public static func bytesInUse() -> Int {
        Int(clamping: mallinfo2().uordblks)
    }
}
