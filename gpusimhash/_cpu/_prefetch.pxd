"""A cache prefetch hint for the compiled loops (GCC's and Clang's ``__builtin_prefetch``).

Verifying a candidate pair reads two documents' features from far apart in memory: a loop that
walks one pair after another waits for each cache miss in turn. Announcing the features of the
next pairs first (`prefetch`) lets the memory system fetch them all at once: the star loop's
comparisons run about twice as fast on a corpus whose features exceed the caches. A hint changes
no result and never faults, even past the end of an array.
"""

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define GPUSIMHASH_PREFETCH(address) __builtin_prefetch((address), 0, 3)
    #else
    #define GPUSIMHASH_PREFETCH(address) ((void)(address))
    #endif
    """
    void prefetch "GPUSIMHASH_PREFETCH"(const void *address) noexcept nogil
