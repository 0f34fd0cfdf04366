/**
 * Kit plumbing that knows nothing of {@code io.sumi.test} (reading the dead-letter topics, the key
 * a Kafka record is filed under). Not an
 * API. What observes deliveries and wires the kit into a Spring test speaks the kit's own types
 * ({@code DeliveryOutcome}, {@code SumiTest}), so it is package-private in {@code io.sumi.test}:
 * this package never depends on the one that uses it (no package cycle).
 */
@NullMarked
package io.sumi.test.internal;

import org.jspecify.annotations.NullMarked;
