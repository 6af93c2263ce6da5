public import SecItemCore

extension SQLiteBackend: SecItemBatchAdding {
    /// Adds every item in one write transaction (one fsync): after a failure or a
    /// crash at any instant the file holds all of them or none (SQLite's WAL
    /// rolls an uncommitted transaction back on the next open). The backend's lock
    /// is held throughout, so other threads' calls wait instead of joining the batch.
    public func addAll(_ items: [StoredItem], progress: (Int) -> Void) throws(SecItemError) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.write { () throws(SecItemError) in
                for (index, item) in items.enumerated() {
                    try c.insertItem(item)
                    progress(index + 1)
                }
            }
        }
    }
}
