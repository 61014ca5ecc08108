//! Transfer buffers aligned for O_DIRECT.
//!
//! O_DIRECT wants the user buffer aligned to the device's logical block
//! size. Over-allocating a `Vec` and starting at the first aligned byte gives
//! that without `unsafe`; the heap block never moves while the buffer lives,
//! so the io_uring engine may hand its address to the kernel.

/// A zero-initialised byte buffer whose start is aligned to `align`.
pub struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` bytes starting on an `align`-byte boundary
    /// (`align` a power of two).
    pub fn new(len: usize, align: usize) -> Self {
        let align = align.max(1).next_power_of_two();
        let storage = vec![0u8; len + align];
        Self::within(storage, len, align)
    }

    /// As [`AlignedBuf::new`], but a buffer the system will not give
    /// (an address-space limit, a huge `len`) is an `OutOfMemory` error
    /// naming its size, not an abort of the whole process.
    pub fn try_new(len: usize, align: usize) -> std::io::Result<Self> {
        let align = align.max(1).next_power_of_two();
        let total = len.checked_add(align);
        let mut storage = Vec::new();
        if total.is_none_or(|n| storage.try_reserve_exact(n).is_err()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!("cannot allocate a transfer buffer of {len} bytes (os error 12)"),
            ));
        }
        storage.resize(len + align, 0);
        Ok(Self::within(storage, len, align))
    }

    fn within(storage: Vec<u8>, len: usize, align: usize) -> Self {
        let start = storage.as_ptr().align_offset(align);
        AlignedBuf {
            storage,
            start,
            len,
        }
    }

    /// The buffer.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The buffer, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_buffer_is_an_error() {
        let e = AlignedBuf::try_new(usize::MAX - 10, 4096).err().unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory);
        let b = AlignedBuf::try_new(100, 512).unwrap();
        assert_eq!(b.as_slice().as_ptr() as usize % 512, 0);
        assert_eq!(b.len(), 100);
    }

    #[test]
    fn aligned() {
        for a in [512usize, 4096, 65536] {
            let b = AlignedBuf::new(12345, a);
            assert_eq!(b.as_slice().as_ptr() as usize % a, 0);
            assert_eq!(b.len(), 12345);
        }
    }
}
