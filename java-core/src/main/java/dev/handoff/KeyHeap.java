// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.Arrays;

/*
 * The heap of eligible keys
 * =========================
 * A binary min-heap of the keys whose head may be dispatched, ordered by the start tag of the head
 * and, for equal tags, by its arrival (StartTags). A key is in it iff it has a head that is not
 * dispatched, the fair share is open, and its cap allows the head (see "Eligibility" in
 * FairShareScheduler). Each KeyState keeps its index, so a key leaves in O(log n) when its head is
 * cancelled or fails. The array shrinks back once empty after a burst of keys.
 */

/**
 * The keys of a {@link FairShareSemaphore} whose head may be dispatched, smallest (tag, arrival)
 * first. Guarded by the fair share's lock; {@link #size()} is also read between two equal stamps.
 */
final class KeyHeap<K> {
    @SuppressWarnings("unchecked")
    @GuardedBy("FairShareScheduler.lock")
    private KeyState<K>[] heap = (KeyState<K>[]) new KeyState<?>[8];

    @GuardedBy("FairShareScheduler.lock")
    private int size;

    /** How many keys are eligible. */
    int size() {
        return size;
    }

    /** The key at index {@code i}, {@code 0 <= i < size()}, in no particular order but the heap's. */
    KeyState<K> at(int i) {
        return heap[i];
    }

    private static <K> boolean before(KeyState<K> a, KeyState<K> b) {
        FairShareTicket<K> x = a.head;
        FairShareTicket<K> y = b.head;
        return x.tag < y.tag || (x.tag == y.tag && x.order < y.order);
    }

    void add(KeyState<K> k) {
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        siftUp(size++, k);
    }

    KeyState<K> poll() {
        KeyState<K> top = heap[0];
        removeAt(0);
        return top;
    }

    void remove(KeyState<K> k) {
        if (k.heapIndex >= 0) {
            removeAt(k.heapIndex);
        }
    }

    private void removeAt(int i) {
        KeyState<K> gone = heap[i];
        gone.heapIndex = -1;
        KeyState<K> last = heap[--size];
        heap[size] = null;
        if (i < size) {
            siftDown(i, last);
            if (heap[i] == last) {
                siftUp(i, last);
            }
        }
        if (size == 0 && heap.length > 64) {
            heap = Arrays.copyOf(heap, 8); // all null: do not keep a large array after a burst of keys
        }
    }

    private void siftUp(int i, KeyState<K> k) {
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            KeyState<K> p = heap[parent];
            if (!before(k, p)) {
                break;
            }
            place(i, p);
            i = parent;
        }
        place(i, k);
    }

    private void siftDown(int i, KeyState<K> k) {
        int half = size >>> 1;
        while (i < half) {
            int c = 2 * i + 1;
            KeyState<K> child = heap[c];
            int r = c + 1;
            if (r < size && before(heap[r], child)) {
                c = r;
                child = heap[c];
            }
            if (!before(child, k)) {
                break;
            }
            place(i, child);
            i = c;
        }
        place(i, k);
    }

    private void place(int i, KeyState<K> k) {
        heap[i] = k;
        k.heapIndex = i;
    }
}
