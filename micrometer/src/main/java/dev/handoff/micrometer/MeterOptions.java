// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import io.micrometer.core.instrument.Tag;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/** The argument checks the builders of this package's meter binders share. */
final class MeterOptions {

    private MeterOptions() {}

    /** {@code value}, or an exception naming {@code call} if it is null or blank. */
    static String notBlank(String call, @Nullable String value, String what) {
        if (value == null) {
            throw new NullPointerException(call + "(null): " + what + " is null");
        }
        if (value.isBlank()) {
            throw new IllegalArgumentException(call + "(\"" + value + "\"): " + what + " must not be blank");
        }
        return value;
    }

    /**
     * {@code prefix}, checked: not blank, neither starting nor ending with a dot ({@code suffixes}
     * shows what the meter names add, for the message).
     */
    static String prefix(@Nullable String prefix, String suffixes) {
        notBlank("prefix", prefix, "the prefix");
        if (prefix.startsWith(".") || prefix.endsWith(".")) {
            throw new IllegalArgumentException("prefix(\"" + prefix
                    + "\"): must not start or end with a dot (the meter names add " + suffixes + ")");
        }
        return prefix;
    }

    /**
     * The tags of {@code tags(keyValues...)}: pairs checked in order, each key also given to
     * {@code checkKey} (with the whole call's arguments, for its message) before it is added.
     */
    static List<Tag> pairs(String @Nullable [] keyValues, BiConsumer<String, String> checkKey) {
        if (keyValues == null) {
            throw new NullPointerException("tags(null): the key-value pairs are null");
        }
        String arguments = Arrays.toString(keyValues);
        if (keyValues.length % 2 != 0) {
            throw new IllegalArgumentException(
                    "tags(" + arguments + "): " + keyValues.length + " strings, but keys and values come in pairs");
        }
        List<Tag> added = new ArrayList<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            if (keyValues[i] == null || keyValues[i + 1] == null) {
                throw new NullPointerException("tags(" + arguments + "): the "
                        + (keyValues[i] == null ? "key " + i : "value " + (i + 1)) + " is null");
            }
            checkKey.accept(keyValues[i], arguments);
            added.add(Tag.of(keyValues[i], keyValues[i + 1]));
        }
        return added;
    }
}
