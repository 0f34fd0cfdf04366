package io.sumi.conformance.stream;

import io.sumi.conformance.report.GuaranteesTableTests;
import org.junit.jupiter.api.Order;

/**
 * The table check of conformance-tests, run after both Stream kinds: this module's columns
 * ({@code stream-kafka}, {@code stream-rabbit}) of {@code docs/guarantees.md} must be what this run
 * found; with {@code -Dsumi.conformance.write-docs=true} it writes them into the shared table.
 */
@Order(Integer.MAX_VALUE)
class StreamGuaranteesTableTests extends GuaranteesTableTests {}
