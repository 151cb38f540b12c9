#include "memory/caching_allocator.hpp"

#include <algorithm>

// Every rule below is DeviceCachingAllocator's in c10/cuda/CUDACachingAllocator.cpp, read at the pytorch/pytorch
// revisions 001074d2 (the 2.4–2.5 file: CUDAAllocatorConfig, release_lock_on_cudamalloc) and the 2.9+ one that reads
// c10/core/AllocatorConfig (AcceleratorAllocatorConfig); the function named in each comment is torch's. The rules
// are the same from 2.0 to 2.13 but where a comment names the release that changed one.

namespace vramcalc {

namespace {

constexpr std::uint64_t kMinBlockSize = 512;       // every size is rounded to a multiple of 512 bytes
constexpr std::uint64_t kSmallSize = kMiB;         // the largest request of the small pool
constexpr std::uint64_t kSmallBuffer = 2 * kMiB;   // the small pool's segments (and expandable pages)
constexpr std::uint64_t kMinLargeAlloc = 10 * kMiB;  // requests below it share one large segment
constexpr std::uint64_t kRoundLarge = 2 * kMiB;    // larger ones get their own, rounded to 2 MiB
constexpr std::uint64_t kNoLimit = ~std::uint64_t(0);

int floor_log2(std::uint64_t v) {
    int n = -1;
    for (; v != 0; v >>= 1) ++n;
    return n;
}

struct Block {
    std::uint64_t addr = 0, size = 0, requested = 0;
    std::int32_t prev = -1, next = -1;  // neighbours within the segment
    std::int32_t segment = -1;          // its expandable segment, -1 for a cudaMalloc segment
    std::uint64_t stream_uses = 0;      // streams recorded besides its own (bit per stream)
    std::uint64_t waiting_on = 0;       // freed, its events on these streams not yet complete
    std::int64_t gc_base = 0;           // the pool's get_free_block count when it was cached
    std::uint8_t stream = 0;
    bool small = false, allocated = false, waiting = false, mapped = true;
};

struct ExpandableSegment {
    std::uint64_t base = 0, page = 0, pages = 0;  // address space: pages × page
    std::vector<std::uint8_t> mapped;              // per page, grown as mapped
};

// A cached block's sort key beside its index, so searches touch no Block. Free lists are sorted by (size, address):
// BlockComparatorSize within one stream; the unmapped lists by address.
struct Entry {
    std::uint64_t size, addr;
    std::int32_t block;
};
using FreeList = std::vector<Entry>;

class Allocator {
public:
    Allocator(const AllocConf& conf, DeviceMemory device) : c_(conf), device_(device) {
        if (c_.per_process_memory_fraction > 0)  // setMemoryFraction: a fraction of cudaMemGetInfo's total
            allowed_ = static_cast<std::uint64_t>(c_.per_process_memory_fraction * double(device.device_total));
        gc_on_ = allowed_ != kNoLimit && c_.garbage_collection_threshold > 0;  // set_fraction && threshold > 0
    }

    ReplayResult run(const std::vector<AllocEvent>& events) {
        ReplayResult r;
        for (std::size_t i = 0; i < events.size(); ++i) {
            const AllocEvent& e = events[i];
            if (e.stream >= kMaxStreams) {
                r.error = "event " + std::to_string(i) + ": stream " + std::to_string(e.stream) + " is not below " +
                          std::to_string(kMaxStreams);
                break;
            }
            if (!apply(e, r.error)) {
                if (r.error.empty())
                    r.failure = AllocatorFailure{i, e.tag, e.bytes, stats_.reserved, stats_.allocated};
                else
                    r.error = "event " + std::to_string(i) + ": " + r.error;
                break;
            }
            note_peaks();
        }
        r.stats = stats_;
        return r;
    }

    std::uint64_t round_size(std::uint64_t size) const {
        if (size < kMinBlockSize) return kMinBlockSize;
        // AllocatorConfig::roundup_power2_divisions(size): the interval's index is log2(size) - 20, within [0, 15].
        const int index = std::clamp(floor_log2(size) - 20, 0, int(kRoundupIntervals) - 1);
        const std::uint64_t divisions = c_.roundup_power2_divisions[std::size_t(index)];
        if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
        return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
    }

    std::uint64_t allocation_size(std::uint64_t size) const {  // get_allocation_size
        if (size <= kSmallSize) return kSmallBuffer;
        if (size < kMinLargeAlloc) return c_.large_segment_size;  // kLargeBuffer (20 MiB) before 2.11
        return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
    }

private:
    // roundup_power2_next_division: the next of `divisions` equal steps between two powers of two.
    static std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint64_t divisions) {
        if ((size & (size - 1)) == 0) return size;
        const std::uint64_t floor = std::uint64_t(1) << floor_log2(size);
        const std::uint64_t step = floor >> floor_log2(divisions);
        if (step == 0) return floor << 1;
        const std::uint64_t below = size & ~(step - 1);
        return below == size ? size : below + step;
    }

    bool apply(const AllocEvent& e, std::string& error) {
        switch (e.op) {
            case AllocOp::allocate: {
                if (e.tensor < tensors_.size() && tensors_[e.tensor] != kNone) {
                    error = "tensor " + std::to_string(e.tensor) + " is allocated twice";
                    return false;
                }
                if (e.tensor >= tensors_.size()) tensors_.resize(std::size_t(e.tensor) + 1, kNone);
                if (e.bytes == 0) {  // CUDACachingAllocator::allocate: a null pointer, no block
                    tensors_[e.tensor] = kEmpty;
                    return true;
                }
                const std::int32_t b = malloc(e.bytes, e.stream);
                if (b < 0) return false;
                tensors_[e.tensor] = b;
                return true;
            }
            case AllocOp::free:
            case AllocOp::record_stream: {
                if (e.tensor >= tensors_.size() || tensors_[e.tensor] == kNone) {
                    error = "tensor " + std::to_string(e.tensor) + " is not allocated";
                    return false;
                }
                const std::int32_t b = tensors_[e.tensor];
                if (e.op == AllocOp::record_stream) {
                    // recordStream: a use on the block's own stream needs no event
                    if (b >= 0 && e.stream != blocks_[b].stream) blocks_[b].stream_uses |= std::uint64_t(1) << e.stream;
                    return true;
                }
                tensors_[e.tensor] = kNone;
                if (b >= 0) free(b);
                return true;
            }
            case AllocOp::stream_done:
                for (std::int32_t b : waiting_) blocks_[b].waiting_on &= ~(std::uint64_t(1) << e.stream);
                return true;
            case AllocOp::empty_cache:
                release_cached_blocks();  // emptyCache
                return true;
        }
        return true;
    }

    void note_peaks() {
        stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
        if (stats_.reserved > stats_.peak_reserved) {
            stats_.peak_reserved = stats_.reserved;
            stats_.free_at_peak = stats_.reserved - stats_.allocated;
            stats_.segments_at_peak = stats_.segments;
        }
    }

    // ---- malloc: the cache first, then the driver, then free cached blocks and retry
    std::int32_t malloc(std::uint64_t bytes, std::uint8_t stream) {
        process_events();
        const std::uint64_t size = round_size(bytes);
        const bool small = size <= kSmallSize;
        const std::uint64_t alloc_size = allocation_size(size);
        if (gc_on_) ++free_calls_[small];
        std::int32_t b = get_free_block(small, stream, size);
        if (b < 0) {
            if (gc_on_) garbage_collect_cached_blocks();
            b = alloc_block(small, stream, size, alloc_size);
            if (b < 0 && release_available_cached_blocks(small, stream, size))
                b = alloc_block(small, stream, size, alloc_size);
            if (b < 0) {
                release_cached_blocks();
                ++stats_.retries;
                b = alloc_block(small, stream, size, alloc_size);
            }
            if (b < 0) return -1;
        }
        return alloc_found_block(b, size, bytes);
    }

    bool should_split(const Block& b, std::uint64_t size) const {
        const std::uint64_t remaining = b.size - size;
        if (b.small || c_.expandable_segments) return remaining >= kMinBlockSize;
        return size < c_.max_split_size && remaining > kSmallSize;
    }

    std::int32_t alloc_found_block(std::int32_t b, std::uint64_t size, std::uint64_t bytes) {
        if (should_split(blocks_[b], size)) {
            const std::int32_t head = new_block();
            Block& rest = blocks_[b];
            Block& h = blocks_[head];
            h = rest;  // same stream, pool, segment
            h.size = size;
            h.prev = rest.prev;
            h.next = b;
            if (h.prev >= 0) blocks_[h.prev].next = head;
            rest.prev = head;
            rest.addr += size;
            rest.size -= size;
            insert_free(b);
            b = head;
        }
        Block& blk = blocks_[b];
        blk.allocated = true;
        blk.requested = bytes;
        stats_.allocated += blk.size;
        return b;
    }

    void free(std::int32_t b) {
        Block& blk = blocks_[b];
        blk.allocated = false;
        stats_.allocated -= blk.size;
        if (blk.stream_uses != 0) {  // insert_events: not reusable until each recorded stream's work is done
            blk.waiting = true;
            blk.waiting_on = blk.stream_uses;
            blk.stream_uses = 0;
            waiting_.push_back(b);
        } else {
            free_block(b);
        }
    }

    // process_events at the start of every malloc: blocks whose events have all completed are cached again.
    void process_events() {
        std::size_t kept = 0;
        for (std::int32_t b : waiting_) {
            if (blocks_[b].waiting_on == 0) free_block(b);
            else waiting_[kept++] = b;
        }
        waiting_.resize(kept);
    }

    // free_block: merged with free neighbours and cached in its pool.
    void free_block(std::int32_t b) {
        blocks_[b].waiting = false;
        blocks_[b].waiting_on = 0;
        try_merge_blocks(b, blocks_[b].prev);
        try_merge_blocks(b, blocks_[b].next);
        insert_free(b);
    }

    bool mergeable(std::int32_t dst, std::int32_t src) const {
        if (src < 0) return false;
        const Block& s = blocks_[src];
        return !s.allocated && !s.waiting && s.mapped == blocks_[dst].mapped;
    }

    void try_merge_blocks(std::int32_t dst, std::int32_t src) {
        if (!mergeable(dst, src)) return;
        Block& d = blocks_[dst];
        Block& s = blocks_[src];
        if (s.mapped) erase_from(free_list(s), src);
        else erase_from(unmapped_list(s), src);
        if (d.prev == src) {
            d.addr = s.addr;
            d.prev = s.prev;
            if (d.prev >= 0) blocks_[d.prev].next = dst;
        } else {
            d.next = s.next;
            if (d.next >= 0) blocks_[d.next].prev = dst;
        }
        d.size += s.size;
        recycle(src);
    }

    // get_free_block: best fit (the smallest cached block of the stream that holds the request), but an oversize
    // block (>= max_split_size) serves only a request that is itself oversize and no more than
    // max_non_split_rounding (20 MiB, kLargeBuffer, before 2.6) smaller.
    std::int32_t get_free_block(bool small, std::uint8_t stream, std::uint64_t size) {
        FreeList& list = free_[small][stream];
        auto it = lower_bound(list, size, 0);
        if (it == list.end()) return -1;
        if (blocks_[it->block].segment >= 0) {
            if (c_.expandable_segments) {
                // A block that can grow into the unmapped space after it counts as that large for best fit.
                auto expandable_size = [&](const Entry& e) {
                    const Block& blk = blocks_[e.block];
                    return blk.size + (blk.next >= 0 && !blocks_[blk.next].mapped ? blocks_[blk.next].size : 0);
                };
                for (auto next = it + 1; blocks_[it->block].segment >= 0 && next != list.end() &&
                                         expandable_size(*next) < expandable_size(*it);
                     ++next)
                    it = next;
            } else {
                while (it != list.end() && blocks_[it->block].segment >= 0) ++it;
                if (it == list.end()) return -1;
            }
        }
        const std::uint64_t found = it->size;
        if (size < c_.max_split_size && found >= c_.max_split_size) return -1;
        if (size >= c_.max_split_size && found >= size + c_.max_non_split_rounding) return -1;
        const std::int32_t b = it->block;
        list.erase(it);
        return b;
    }

    // alloc_block: a new segment from the driver, or (expandable segments) more pages mapped.
    std::int32_t alloc_block(bool small, std::uint8_t stream, std::uint64_t size, std::uint64_t alloc_size) {
        if (allowed_ != kNoLimit && stats_.reserved + alloc_size > allowed_) return -1;
        if (c_.expandable_segments) return try_allocate_expandable_block(small, stream, size);
        if (stats_.reserved + alloc_size > device_.capacity) return -1;  // cudaMalloc: out of memory
        const std::int32_t b = new_block();
        Block& blk = blocks_[b];
        blk = Block{};
        blk.addr = next_address_;
        blk.size = alloc_size;
        blk.stream = stream;
        blk.small = small;
        next_address_ += alloc_size;
        stats_.reserved += alloc_size;
        ++stats_.segments;
        ++stats_.device_mallocs;
        return b;
    }

    // release_available_cached_blocks: with max_split_size set, free one cached oversize block large enough, or
    // oversize blocks from the largest down until enough is freed. Expandable blocks are skipped (PR #134338, 2.5;
    // before, mixing the options could fail an assertion).
    bool release_available_cached_blocks(bool small, std::uint8_t stream, std::uint64_t size) {
        if (c_.max_split_size == kNoLimit) return false;
        FreeList& list = free_[small][stream];
        const std::uint64_t key = std::max(size, c_.max_split_size);
        auto it = lower_bound(list, key, 0);
        if (it != list.end() && blocks_[it->block].segment < 0) {
            release_block(it->block);
            return true;
        }
        std::uint64_t released = 0;
        std::vector<std::int32_t>& doomed = scratch_;
        doomed.clear();
        for (auto r = std::make_reverse_iterator(it); r != list.rend() && released < key; ++r) {
            const Block& blk = blocks_[r->block];
            if (blk.size < c_.max_split_size || blk.segment >= 0) break;
            released += blk.size;
            doomed.push_back(r->block);
        }
        for (std::int32_t b : doomed) release_block(b);
        return released >= key;
    }

    // release_cached_blocks (empty_cache, and the last retry): wait for every stream, then return every free
    // segment to the driver (synchronize_and_free_events, release_blocks).
    void release_cached_blocks() {
        for (std::int32_t b : waiting_) free_block(b);
        waiting_.clear();
        for (bool small : {false, true}) {
            std::vector<std::int32_t>& unmap = scratch_;
            unmap.clear();
            for (FreeList& list : free_[small]) {
                for (std::size_t i = 0; i < list.size();) {
                    const std::int32_t b = list[i].block;
                    const Block& blk = blocks_[b];
                    if (blk.segment >= 0) unmap.push_back(b), ++i;
                    else if (blk.prev < 0 && blk.next < 0) release_block(b);  // erases list[i]
                    else ++i;
                }
            }
            for (std::int32_t b : unmap) {
                unmap_block(b);
                const Block& blk = blocks_[b];
                if (!blk.mapped && blk.prev < 0 && blk.next < 0) release_expandable_segment(b);
            }
        }
    }

    void release_block(std::int32_t b) {  // cudaFree of a whole free segment
        erase_from(free_list(blocks_[b]), b);
        stats_.reserved -= blocks_[b].size;
        --stats_.segments;
        ++stats_.device_frees;
        recycle(b);
    }

    // garbage_collect_cached_blocks (garbage_collection_threshold, only under a memory fraction): once reserved
    // passes threshold × the allowed memory, free whole cached large segments not reused for longer than the
    // average, until enough is freed.
    void garbage_collect_cached_blocks() {
        const auto threshold =
            static_cast<std::uint64_t>(c_.garbage_collection_threshold * static_cast<double>(allowed_));
        if (stats_.reserved <= threshold) return;
        const std::uint64_t target = stats_.reserved - threshold;
        auto freeable = [&](const Block& blk) { return blk.prev < 0 && blk.next < 0 && blk.segment < 0; };
        std::uint64_t total_age = 0;
        int count = 0;
        for (const FreeList& list : free_[false])
            for (const Entry& e : list)
                if (freeable(blocks_[e.block])) total_age += age(blocks_[e.block]), ++count;
        std::uint64_t reclaimed = 0;
        bool freed = true;
        while (reclaimed < target && freed && count > 0) {
            const double threshold_age = double(total_age) / count;
            freed = false;
            std::vector<std::int32_t>& old = scratch_;
            old.clear();
            for (const FreeList& list : free_[false])
                for (const Entry& e : list)
                    if (freeable(blocks_[e.block]) && double(age(blocks_[e.block])) >= threshold_age)
                        old.push_back(e.block);
            for (std::int32_t b : old) {
                freed = true;
                reclaimed += blocks_[b].size;
                total_age -= age(blocks_[b]);
                --count;
                release_block(b);
            }
        }
    }

    std::uint64_t age(const Block& b) const { return std::uint64_t(free_calls_[false] - b.gc_base); }

    // ---- expandable segments: one address range per stream and pool, mapped in pages (2 MiB for the small pool,
    // 20 MiB — from 2.11 large_segment_size_mb — for the large one) as it grows.
    std::int32_t try_allocate_expandable_block(bool small, std::uint8_t stream, std::uint64_t size) {
        std::int32_t c = find_expandable_block(small, stream, size);
        if (!blocks_[c].mapped && !map_block(c, std::min(blocks_[c].size, size))) return -1;
        while (blocks_[c].size < size) {
            const std::int32_t next = blocks_[c].next;
            if (!map_block(next, std::min(size - blocks_[c].size, blocks_[next].size))) return -1;
            c = next;  // map_block merged c into it
        }
        erase_from(free_list(blocks_[c]), c);
        return c;
    }

    bool free_space(std::int32_t b) const {
        return b >= 0 && !blocks_[b].allocated && !blocks_[b].waiting;
    }

    // find_expandable_block: the lowest address where free and unmapped space together hold `size`; else a new
    // segment whose address space is 1 1/8 of the device's memory.
    std::int32_t find_expandable_block(bool small, std::uint8_t stream, std::uint64_t size) {
        for (const Entry& e : unmapped_[small][stream]) {
            const std::int32_t u = e.block;
            std::int32_t c = free_space(blocks_[u].prev) ? blocks_[u].prev : u;
            std::uint64_t room = 0;
            for (std::int32_t x = c; room < size && free_space(x); x = blocks_[x].next) room += blocks_[x].size;
            if (room >= size) return c;
        }
        ExpandableSegment s;
        s.page = small ? kSmallBuffer : c_.large_segment_size;
        const std::uint64_t space = device_.device_total + device_.device_total / 8;
        s.pages = (space + s.page - 1) / s.page;
        s.base = next_address_;
        next_address_ += s.pages * s.page;
        segments_.push_back(std::move(s));
        const std::int32_t b = new_block();
        Block& blk = blocks_[b];
        blk = Block{};
        blk.addr = segments_.back().base;
        blk.size = segments_.back().pages * segments_.back().page;
        blk.stream = stream;
        blk.small = small;
        blk.mapped = false;
        blk.segment = std::int32_t(segments_.size() - 1);
        insert_sorted_by_address(unmapped_[small][stream], b);
        return b;
    }

    // map_block: the pages under [addr, addr + size) mapped (all of them or none), the block cached and merged.
    bool map_block(std::int32_t b, std::uint64_t size) {
        ExpandableSegment& s = segments_[std::size_t(blocks_[b].segment)];
        const std::uint64_t first = (blocks_[b].addr - s.base) / s.page;
        const std::uint64_t end = (blocks_[b].addr + size - s.base + s.page - 1) / s.page;
        const std::uint64_t bytes = (end - first) * s.page;
        if (stats_.reserved + bytes > device_.capacity) return false;  // cuMemCreate: out of memory
        set_pages(s, first, end, true);
        stats_.reserved += bytes;
        ++stats_.device_mallocs;
        Block& blk = blocks_[b];
        erase_from(unmapped_list(blk), b);
        blk.mapped = true;
        if (bytes < blk.size) {  // the rest stays unmapped
            const std::int32_t rest = new_block();
            Block& r = blocks_[rest];
            Block& m = blocks_[b];
            r = m;
            r.addr = m.addr + bytes;
            r.size = m.size - bytes;
            r.mapped = false;
            r.prev = b;
            if (r.next >= 0) blocks_[r.next].prev = rest;
            m.next = rest;
            m.size = bytes;
            insert_sorted_by_address(unmapped_list(r), rest);
        }
        try_merge_blocks(b, blocks_[b].prev);
        try_merge_blocks(b, blocks_[b].next);
        insert_free(b);
        return true;
    }

    // unmap_block: the whole pages inside a free block given back; the slivers at either end stay mapped and free.
    void unmap_block(std::int32_t b) {
        ExpandableSegment& s = segments_[std::size_t(blocks_[b].segment)];
        const std::uint64_t first = (blocks_[b].addr - s.base + s.page - 1) / s.page;
        const std::uint64_t end = (blocks_[b].addr + blocks_[b].size - s.base) / s.page;
        if (first >= end) return;
        erase_from(free_list(blocks_[b]), b);
        const std::uint64_t lo = s.base + first * s.page, hi = s.base + end * s.page;
        if (lo > blocks_[b].addr) split_off(b, lo - blocks_[b].addr, true);
        if (blocks_[b].addr + blocks_[b].size > hi) split_off(b, blocks_[b].addr + blocks_[b].size - hi, false);
        set_pages(s, first, end, false);
        stats_.reserved -= hi - lo;
        ++stats_.device_frees;
        blocks_[b].mapped = false;
        try_merge_blocks(b, blocks_[b].prev);
        try_merge_blocks(b, blocks_[b].next);
        insert_sorted_by_address(unmapped_list(blocks_[b]), b);
    }

    // A free mapped block of `bytes` cut from the front (or back) of b.
    void split_off(std::int32_t b, std::uint64_t bytes, bool front) {
        const std::int32_t x = new_block();
        Block& piece = blocks_[x];
        Block& blk = blocks_[b];
        piece = blk;
        piece.size = bytes;
        blk.size -= bytes;
        if (front) {
            blk.addr += bytes;
            piece.next = b;
            if (piece.prev >= 0) blocks_[piece.prev].next = x;
            blk.prev = x;
        } else {
            piece.addr = blk.addr + blk.size;
            piece.prev = b;
            if (piece.next >= 0) blocks_[piece.next].prev = x;
            blk.next = x;
        }
        insert_free(x);
    }

    void release_expandable_segment(std::int32_t b) {
        erase_from(unmapped_list(blocks_[b]), b);
        recycle(b);
    }

    // The snapshot reports one segment per contiguous mapped run of an expandable segment.
    void set_pages(ExpandableSegment& s, std::uint64_t first, std::uint64_t end, bool on) {
        if (s.mapped.size() < end) s.mapped.resize(end, 0);
        const bool left = first > 0 && s.mapped[first - 1];
        const bool right = end < s.mapped.size() && s.mapped[end];
        std::fill(s.mapped.begin() + std::ptrdiff_t(first), s.mapped.begin() + std::ptrdiff_t(end), on ? 1 : 0);
        const int change = on ? 1 - int(left) - int(right) : int(left) + int(right) - 1;
        stats_.segments = std::uint32_t(int(stats_.segments) + change);
    }

    // ---- free lists
    FreeList& free_list(const Block& b) { return free_[b.small][b.stream]; }
    FreeList& unmapped_list(const Block& b) { return unmapped_[b.small][b.stream]; }

    static FreeList::iterator lower_bound(FreeList& list, std::uint64_t size, std::uint64_t addr) {
        return std::lower_bound(list.begin(), list.end(), Entry{size, addr, 0}, [](const Entry& x, const Entry& key) {
            return x.size < key.size || (x.size == key.size && x.addr < key.addr);
        });
    }
    static FreeList::iterator address_bound(FreeList& list, std::uint64_t addr) {
        return std::lower_bound(list.begin(), list.end(), addr,
                                [](const Entry& x, std::uint64_t a) { return x.addr < a; });
    }

    void insert_free(std::int32_t b) {
        Block& blk = blocks_[b];
        blk.gc_base = free_calls_[blk.small];  // insert_into_blocks
        FreeList& list = free_list(blk);
        list.insert(lower_bound(list, blk.size, blk.addr), Entry{blk.size, blk.addr, b});
    }

    void insert_sorted_by_address(FreeList& list, std::int32_t b) {
        list.insert(address_bound(list, blocks_[b].addr), Entry{blocks_[b].size, blocks_[b].addr, b});
    }

    void erase_from(FreeList& list, std::int32_t b) {
        const Block& blk = blocks_[b];
        auto it = blk.mapped ? lower_bound(list, blk.size, blk.addr) : address_bound(list, blk.addr);
        if (it != list.end() && it->block == b) list.erase(it);
    }

    std::int32_t new_block() {
        if (!spare_.empty()) {
            const std::int32_t b = spare_.back();
            spare_.pop_back();
            return b;
        }
        blocks_.emplace_back();
        return std::int32_t(blocks_.size() - 1);
    }
    void recycle(std::int32_t b) { spare_.push_back(b); }

    static constexpr std::int32_t kNone = -1, kEmpty = -2;

    const AllocConf& c_;
    DeviceMemory device_;
    std::uint64_t allowed_ = kNoLimit;  // allowed_memory_maximum under a memory fraction
    bool gc_on_ = false;
    AllocatorStats stats_;
    std::vector<Block> blocks_;
    std::vector<std::int32_t> spare_, waiting_, scratch_;
    std::vector<std::int32_t> tensors_;  // tensor id → block
    std::array<std::array<FreeList, kMaxStreams>, 2> free_, unmapped_;  // [small][stream]
    std::int64_t free_calls_[2] = {0, 0};  // get_free_blocks_call_count per pool
    std::vector<ExpandableSegment> segments_;
    std::uint64_t next_address_ = std::uint64_t(1) << 40;
};

}  // namespace

ReplayResult replay_caching_allocator(const std::vector<AllocEvent>& events, const AllocConf& conf,
                                      DeviceMemory device) {
    return Allocator(conf, device).run(events);
}

std::uint64_t allocator_round_size(std::uint64_t bytes, const AllocConf& conf) {
    return Allocator(conf, {}).round_size(bytes);
}

std::uint64_t allocator_segment_size(std::uint64_t rounded, const AllocConf& conf) {
    return Allocator(conf, {}).allocation_size(rounded);
}

}  // namespace vramcalc
