"""Files in and out: record readers, atomic writers, and the checksummed bundle store."""
