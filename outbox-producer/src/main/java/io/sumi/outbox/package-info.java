/**
 * Sumi's transactional outbox: {@link io.sumi.outbox.Outbox#append} writes a message in the
 * caller's transaction, the {@link io.sumi.outbox.OutboxDispatcher} publishes committed rows
 * through an {@link io.sumi.outbox.OutboxPublisher} (Kafka: {@code io.sumi.outbox.kafka}), the
 * {@link io.sumi.outbox.OutboxPruner} deletes dispatched rows after the retention, and
 * {@link io.sumi.outbox.OutboxTable} is where the rows live and what operators query and re-drive.
 */
@NullMarked
package io.sumi.outbox;

import org.jspecify.annotations.NullMarked;
