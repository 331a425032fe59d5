// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The field or method so marked is read and written only while the named lock is held. A method
 * whose name ends in {@code Locked} is called with the core's lock held, and says so here too.
 * Source-retained: a note for readers and reviewers, checked by no tool.
 */
@Documented
@Retention(RetentionPolicy.SOURCE)
@Target({ElementType.FIELD, ElementType.METHOD})
@interface GuardedBy {
    /** The lock: {@code "lock"} for the core's internal lock, else the field that holds it. */
    String value();
}
