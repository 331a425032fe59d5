// SPDX-License-Identifier: Apache-2.0
package dev.handoff.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.SettingDefinition;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * One wait in the queue of a semaphore, mutex or read-write lock, committed by {@link JfrWaitListener#settled} when the wait ends
 * (so its start time is the end of the wait; {@link #waitTime} is how long it was). No stack trace:
 * the committing thread is the one that ended the wait (the releasing, cancelling or closing one),
 * seldom the waiter.
 */
@Name(SemaphoreWaitEvent.NAME)
@Label("Semaphore Wait")
@Category("handoff")
@Description("An acquisition or lock that waited in a handoff primitive's queue, recorded when the wait ended, "
        + "if it waited at least the waitThreshold")
@StackTrace(false)
final class SemaphoreWaitEvent extends Event {

    static final String NAME = "dev.handoff.SemaphoreWait";

    @Label("Semaphore")
    @Description("The name of the semaphore, mutex or read-write lock (or the name given to the JfrWaitListener)")
    String semaphore;

    @Label("Permits")
    @Description("The weight: what was granted if the outcome is granted, else what was waited for")
    long permits;

    @Label("Outcome")
    @Description("How the wait ended: granted, cancelled, timed_out, closed or failed")
    String outcome;

    @Label("Waiters Ahead")
    @Description("The acquisitions queued before this one when it joined the queue")
    int waitersAhead;

    @Label("Wait Time")
    @Description("How long the acquisition waited, from joining the queue to the end of the wait")
    @Timespan(Timespan.NANOSECONDS)
    long waitTime;

    /**
     * The {@code waitThreshold} setting: JFR calls it from {@code shouldCommit()} and
     * {@code commit()}, with {@link #waitTime} already set.
     *
     * @param threshold the setting's control
     * @return whether this wait is long enough to record
     */
    @Name("waitThreshold")
    @Label("Wait Threshold")
    @Description("Record only the waits at least this long, for example 20 ms (the default) or 0 ms (all)")
    @SettingDefinition
    protected boolean waitThreshold(WaitThreshold threshold) {
        return threshold.accepts(waitTime);
    }
}
