// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.Map;

/*
 * Tags (start-time fair queuing, SFQ)
 * ===================================
 * Virtual time is a long in units of 1/SCALE, SCALE = 720720 (divisible by 1..16, so every share
 * up to 16 gives exact tags). A grant of n to a key of share w advances the key's finish tag by
 * advance(n, w) = ceil(n * SCALE / w) (saturated at 2^60). The system virtual time V is the start
 * tag of the request last dispatched. When a key's head enters the heap (it became the head, or
 * its key became eligible again) it is tagged max(V, finish(key)); a key that becomes active
 * starts with finish = V, so idle time earns no credit. Ties go to the earlier arrival. A grant at
 * once (nothing that could be served waits) is not charged: it moves neither V nor the key's
 * finish. It took nobody's turn, and no stretch of the fairness bound below contains one (while a
 * key waits servable, nothing is granted at once); charging it would only make the key's next
 * wait start later by that one grant. Not charging it is also what lets solo mode take and return
 * permits without the lock.
 *
 * Why start tags, not finish tags: the order must not depend on a request's own weight, or a
 * light request of a key would overtake an older heavy one of another key again and again (with
 * finish tags a heavy head can be passed over by every lighter arrival with a smaller finish tag,
 * which is starvation with partial assignment); with start tags the dispatched head always has the
 * smallest tag there is (every tag given later is >= V = its tag, ties go to it), so
 * non-preemptive dispatch, "no barging" and "first in order" are one and the same thing. SFQ also
 * needs no knowledge of the capacity (a semaphore's service rate is not fixed).
 *
 * Every tag in the heap is >= V (V only moves to the smallest one). When V passes 2^61 every tag
 * is rebased by -V (finish tags clamp at 0, which max(V, .) cannot tell from their value). A grant
 * is charged once its ticket settled, when nothing is dispatched, so the tags to rebase are the
 * keys' finish tags and the tags of the heads in the heap.
 *
 * Fairness bound (proof)
 * ======================
 * Let keys a and b wait, uncapped, through a stretch of consecutive grants G (both have a request
 * in the fair share's queues or dispatched all along). For a waiting key, each next head is tagged
 * right after its previous grant, when V = that grant's tag S_i <= finish = S_i + n_i/w, so its
 * tags run S_{i+1} = S_i + n_i / w (1). Grants happen in nondecreasing tag order (2). Let V1, V2 be
 * the tags of the first and last grant of G. (1) gives granted(a)/w_a = F_last(a) - S_first(a). By
 * (2) and since a's head waits in the heap during G with a tag >= V: S_first(a) >= V1, and
 * S_first(a) <= V1 + nmax(a)/w_a (it was tagged max(V, previous finish) with V <= V1 and the
 * previous grant's tag <= V1); F_last(a) is the tag of a's next head, not granted in G, so
 * F_last(a) >= V2, and F_last(a) = S_last(a) + n/w_a <= V2 + nmax(a)/w_a. So
 * |granted(a)/w_a - (V2 - V1)| <= nmax(a)/w_a, the same for b, hence
 *     |granted(a)/w_a - granted(b)/w_b| <= nmax(a)/w_a + nmax(b)/w_b,
 * plus one 1/SCALE per grant of rounding for shares that do not divide SCALE. This is Goyal, Vin
 * and Cheng's bound for SFQ. A key that starts to wait gets tag V, so a polite key waits behind at
 * most the dispatched request and, per other waiting key, the requests whose tags are below
 * V + its own request / its share: independent of how long the others' queues are.
 *
 * References
 * ----------
 * - P. Goyal, H. Vin, H. Cheng, Start-time Fair Queueing, SIGCOMM 1996 (the tags and the bound).
 * - A. Demers, S. Keshav, S. Shenker, Analysis and simulation of a fair queueing algorithm, 1989.
 * - Kubernetes API Priority and Fairness (seats = weights, fair queuing across flows).
 */

/**
 * The virtual time of a {@link FairShareSemaphore} and the start tags it gives: which head is
 * first in fair order, and what a grant costs its key. Guarded by the fair share's lock.
 */
final class StartTags {

    /** Units of virtual time per permit of a key of share 1. */
    static final long SCALE = 720_720L;

    /** The largest advance of virtual time by one grant. */
    static final long MAX_ADVANCE = 1L << 60;

    /** Virtual time beyond which every tag is rebased. */
    static final long REBASE_AT = 1L << 61;

    /** The system virtual time V: the start tag of the request last dispatched. */
    @GuardedBy("FairShareScheduler.lock")
    private long virtualTime;
    /** Arrival counter: ties between equal tags go to the lower one. */
    @GuardedBy("FairShareScheduler.lock")
    private long arrivals;

    /** The system virtual time V. */
    long now() {
        return virtualTime;
    }

    /** The arrival order of a ticket queued now. */
    long nextArrival() {
        return arrivals++;
    }

    /** Tags the head of {@code k}, which enters the heap: max(V, finish(k)). */
    <K> void tagHead(KeyState<K> k) {
        k.head.tag = Math.max(virtualTime, k.finish);
    }

    /** {@code t}, the head with the smallest tag, is dispatched: V moves to its tag. */
    void dispatched(FairShareTicket<?> t) {
        virtualTime = Math.max(virtualTime, t.tag);
    }

    /**
     * Charges {@code k} for the grant of its dispatched ticket {@code t}: its next head starts
     * {@code t.permits / share} later. Then rebases every tag if V is far; nothing is dispatched.
     */
    <K> void charge(KeyState<K> k, FairShareTicket<K> t, Map<?, KeyState<K>> keys, KeyHeap<K> heap) {
        k.finish = t.tag + advance(t.permits, k.share);
        rebaseIfFar(keys, heap);
    }

    /** ceil(n * SCALE / w), saturated at MAX_ADVANCE ({@code 1 <= w <= MAX_SHARE}). */
    static long advance(long n, long w) {
        long q = n / w;
        long r = n % w;
        if (q > MAX_ADVANCE / SCALE) {
            return MAX_ADVANCE;
        }
        return Math.min(MAX_ADVANCE, q * SCALE + (r * SCALE + w - 1) / w);
    }

    /** Rebases every tag by -V once V is far; order unchanged. */
    private <K> void rebaseIfFar(Map<?, KeyState<K>> keys, KeyHeap<K> heap) {
        long base = virtualTime;
        if (base < REBASE_AT) {
            return;
        }
        virtualTime = 0;
        for (KeyState<K> k : keys.values()) {
            k.finish = Math.max(0L, k.finish - base);
        }
        for (int i = 0; i < heap.size(); i++) {
            FairShareTicket<K> h = heap.at(i).head;
            h.tag = Math.max(0L, h.tag - base);
        }
    }
}
