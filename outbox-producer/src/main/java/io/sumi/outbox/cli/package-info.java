/**
 * Command-line tools around the outbox library: {@link io.sumi.outbox.cli.OutboxBackfillCommand}.
 */
@NullMarked
package io.sumi.outbox.cli;

import org.jspecify.annotations.NullMarked;
