//! The byte codec of exported states: little-endian fixed-width integers, and the
//! checksum that ends them. A leaf: it knows bytes, not breakers.

/// Why bytes could not be read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// The bytes ran out before the value did.
    Truncated,
    /// A field holds an impossible value (named).
    Corrupt(&'static str),
}

/// Appends little-endian values to a buffer, remembering whether it ran out.
pub(crate) struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(out: &'a mut [u8]) -> Self {
        Self {
            out,
            len: 0,
            overflow: false,
        }
    }

    /// Appends `N` bytes: a fixed-width store, where a slice's copy is a `memory.copy`,
    /// which a wasm runtime may run as a call into the host.
    pub(crate) fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        let end = self.len.saturating_add(N);
        match self
            .out
            .get_mut(self.len..)
            .and_then(<[u8]>::first_chunk_mut::<N>)
        {
            Some(dst) => {
                *dst = bytes;
                self.len = end;
            }
            None => self.overflow = true,
        }
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.put([v]);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        self.put(v.to_le_bytes());
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.put(v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.put(v.to_le_bytes());
    }
    /// A run of `u64`s. Out of line: inlined, the loop over a fixed-length array is
    /// unrolled, and the component has a size budget.
    #[inline(never)]
    pub(crate) fn u64s(&mut self, values: &[u64]) {
        for v in values {
            self.u64(*v);
        }
    }

    /// The bytes written so far, or `None` if the buffer ran out.
    pub(crate) fn written(&self) -> Option<&[u8]> {
        if self.overflow {
            None
        } else {
            self.out.get(..self.len)
        }
    }

    /// Appends the checksum of everything written; the total length, or `None` if the
    /// buffer ran out.
    pub(crate) fn seal(mut self) -> Option<usize> {
        let checksum = fnv1a(self.written()?);
        self.u32(checksum);
        self.written().map(<[u8]>::len)
    }
}

/// Reads little-endian values, failing with [`Invalid::Truncated`] past the end.
pub(crate) struct Reader<'a> {
    input: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over the body of sealed bytes, and whether their checksum matches
    /// (checked by the caller when it chooses, so bytes that are no state at all can be
    /// told from damaged ones).
    pub(crate) fn open(bytes: &'a [u8]) -> Result<(Self, bool), Invalid> {
        let (body, checksum) = bytes.split_last_chunk::<4>().ok_or(Invalid::Truncated)?;
        Ok((
            Self { input: body },
            fnv1a(body) == u32::from_le_bytes(*checksum),
        ))
    }

    pub(crate) fn take<const N: usize>(&mut self) -> Result<[u8; N], Invalid> {
        let (head, rest) = self
            .input
            .split_first_chunk::<N>()
            .ok_or(Invalid::Truncated)?;
        self.input = rest;
        Ok(*head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Invalid> {
        self.take::<1>().map(|[b]| b)
    }
    pub(crate) fn u16(&mut self) -> Result<u16, Invalid> {
        self.take().map(u16::from_le_bytes)
    }
    pub(crate) fn u32(&mut self) -> Result<u32, Invalid> {
        self.take().map(u32::from_le_bytes)
    }
    pub(crate) fn u64(&mut self) -> Result<u64, Invalid> {
        self.take().map(u64::from_le_bytes)
    }
    /// Fills `out` with `u64`s (out of line, as `Writer::u64s`).
    #[inline(never)]
    pub(crate) fn u64s(&mut self, out: &mut [u64]) -> Result<(), Invalid> {
        for v in out {
            *v = self.u64()?;
        }
        Ok(())
    }

    /// Whether every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.input.is_empty()
    }
}

/// FNV-1a, 32 bits: catches damaged bytes, not forgeries.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}
