package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The window Sumi cannot close alone: the provider was called, then the consumer died before the
 * ledger said {@code COMPLETED}. The redelivery runs the handler again, with the same key, and the
 * provider's idempotency turns the second call into a replay: exactly one real charge.
 */
class CrashBetweenProviderCallAndCompletionTests extends H2ExecutorTestSupport {

    /** A payment provider with Stripe's idempotency: same key, same request → the first response again. */
    static final class IdempotentProvider {
        record Response(String chargeId, String request) {}

        final Map<String, Response> byKey = new ConcurrentHashMap<>();
        final List<String> keysSeen = new CopyOnWriteArrayList<>();
        final AtomicInteger charges = new AtomicInteger();
        final AtomicInteger replays = new AtomicInteger();

        String charge(String idempotencyKey, String request) {
            keysSeen.add(idempotencyKey);
            Response previous = byKey.get(idempotencyKey);
            if (previous != null) {
                if (!previous.request().equals(request)) {
                    throw new IllegalArgumentException("400: key reused with other parameters");
                }
                replays.incrementAndGet();
                return previous.chargeId();
            }
            Response created = new Response("ch_" + charges.incrementAndGet(), request);
            byKey.put(idempotencyKey, created);
            return created.chargeId();
        }
    }

    /** Forwards to the ledger, but "dies" instead of completing while {@code crash} is set. */
    static final class CrashingStore extends ForwardingProcessedMessageStore {
        private final AtomicBoolean crash;

        CrashingStore(ProcessedMessageStore delegate, AtomicBoolean crash) {
            super(delegate);
            this.crash = crash;
        }

        @Override
        public boolean complete(ProcessedMessage claim) {
            crashIfSet();
            return super.complete(claim);
        }

        @Override
        public boolean complete(ProcessedMessage claim, @Nullable StoredReply reply) {
            crashIfSet();
            return super.complete(claim, reply);
        }

        @Override
        public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
            crashIfSet();
            return super.completeAll(consumer, claimToken, messageIds);
        }

        private void crashIfSet() {
            if (crash.get()) {
                throw new IllegalStateException(
                        "simulated crash between the provider call and the ledger's completion");
            }
        }
    }

    @Test
    void aCrashAfterTheProviderCallLeadsToOneRealCharge() throws Exception {
        IdempotentProvider provider = new IdempotentProvider();
        AtomicBoolean crashOnComplete = new AtomicBoolean(true);
        // The "crash": the JVM dies right after the handler returned, before the ledger's
        // completion; no release happens, so the claim stays until its lease runs out.
        IdempotentExecutor crashing = IdempotentExecutor.builder(new CrashingStore(store, crashOnComplete))
                .meterRegistry(meters)
                .build();

        assertThatThrownBy(() -> crashing.execute(
                        lease(),
                        message("order-1", "charge 10 EUR"),
                        () -> provider.charge(IdempotencyContext.current().key(), "charge 10 EUR")))
                .hasMessageContaining("simulated crash");
        assertThat(provider.charges).hasValue(1);
        ProcessedMessage stuck = row("order-1").orElseThrow();
        assertThat(stuck.status()).isEqualTo(MessageStatus.IN_PROGRESS);

        // The broker redelivers; the redelivery is BUSY until the dead consumer's lease ends.
        crashOnComplete.set(false);
        assertThatThrownBy(() -> executor.execute(lease(), message("order-1", "charge 10 EUR"), () -> "never"))
                .isInstanceOf(MessageBusyException.class);
        advance(LEASE);
        HandlerResult<String> redelivered = executor.execute(
                lease(),
                message("order-1", "charge 10 EUR"),
                () -> provider.charge(IdempotencyContext.current().key(), "charge 10 EUR"));

        assertThat(redelivered.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(redelivered.value()).isEqualTo("ch_1");
        assertThat(provider.keysSeen).containsExactly("order-1", "order-1");
        assertThat(provider.charges).hasValue(1);
        assertThat(provider.replays).hasValue(1);
        assertThat(row("order-1").orElseThrow()).satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.attempts()).isEqualTo(2);
        });
        // Later duplicates do not even reach the provider.
        assertThat(executor.execute(lease(), message("order-1", "charge 10 EUR"), () -> provider.charge("order-1", "x"))
                        .outcome())
                .isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(provider.keysSeen).hasSize(2);
        Objects.requireNonNull(provider.byKey.get("order-1"));
    }
}
