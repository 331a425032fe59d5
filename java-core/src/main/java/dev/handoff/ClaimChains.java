// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import org.jspecify.annotations.Nullable;

/**
 * The walk that settles a chain of nodes to wake, after the lock that made it: every node granted
 * before its claim ran (CLAIMING) has its claim asked, in FIFO order, and the nodes that a declined
 * claim's permits settle join the end of the same walk, so a run of declines is a loop, not a
 * recursion. The core (ProvisionalGrants.settleClaims) and the fair share (FairShareClaims.settle)
 * say how one node is settled; the order and the chain's links are kept here.
 */
final class ClaimChains {
    private ClaimChains() {}

    /** How one CLAIMING node is settled, after the lock. */
    interface Settler {
        /**
         * Asks the claim of {@code claiming} and settles it (GRANTED, CANCELLED or FAILED).
         *
         * @return the chain of nodes that a declined grant's permits settled, or null
         */
        @Nullable
        Acquisition settleClaim(Acquisition claiming);
    }

    /** Whether {@code chain} holds a CLAIMING node; false for the common chain, at the cost of a scan. */
    static boolean anyClaiming(@Nullable Acquisition chain) {
        for (Acquisition a = chain; a != null; a = a.next) {
            if (a.state == Acquisition.CLAIMING) {
                return true;
            }
        }
        return false;
    }

    /**
     * Settles each CLAIMING node of {@code chain} through {@code settler}, in order; the chains it
     * returns are appended and walked too. Returns the whole chain, every node settled, in the
     * order of the walk.
     */
    static Acquisition settleInOrder(Acquisition chain, Settler settler) {
        Acquisition first = null;
        Acquisition last = null;
        Acquisition todo = chain;
        Acquisition todoLast = lastOf(chain);
        while (todo != null) {
            Acquisition a = todo;
            todo = a.next;
            a.next = null;
            if (todo == null) {
                todoLast = null;
            }
            if (a.state == Acquisition.CLAIMING) {
                Acquisition more = settler.settleClaim(a);
                if (more != null) { // settled after a: after the rest of the chain
                    if (todo == null) {
                        todo = more;
                    } else {
                        todoLast.next = more;
                    }
                    todoLast = lastOf(more);
                }
            }
            if (last == null) {
                first = a;
            } else {
                last.next = a;
            }
            last = a;
        }
        return first;
    }

    private static Acquisition lastOf(Acquisition chain) {
        Acquisition a = chain;
        while (a.next != null) {
            a = a.next;
        }
        return a;
    }
}
