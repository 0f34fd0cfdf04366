package io.sumi.kafka.share.conformance;

import io.sumi.conformance.report.GuaranteesTableTests;
import org.junit.jupiter.api.Order;

/**
 * The table check of conformance-tests, run after the share kind: this module's column ({@code
 * kafka-share}) of {@code docs/guarantees.md} must be what this run found; with {@code
 * -Dsumi.conformance.write-docs=true} it writes it into the shared table.
 */
@Order(Integer.MAX_VALUE)
class ShareGuaranteesTableTests extends GuaranteesTableTests {}
