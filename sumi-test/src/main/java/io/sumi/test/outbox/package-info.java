/**
 * The outbox's two contract tests, for an application's own code: extend
 * {@link io.sumi.test.outbox.OutboxRollbackContractTests} and
 * {@link io.sumi.test.outbox.OutboxRedeliveryContractTests} in a {@code @SpringBootTest} and point
 * them at the service method that appends and the listener that consumes; or call
 * {@link io.sumi.test.outbox.OutboxContracts} from a test of your own.
 */
@NullMarked
package io.sumi.test.outbox;

import org.jspecify.annotations.NullMarked;
