package io.sumi.kafka.share;

import io.micrometer.observation.Observation;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.consumer.binder.BusyHold;
import io.sumi.consumer.binder.BusyPolicy;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport.Settlement;
import io.sumi.consumer.exception.Verdict;
import io.sumi.kafka.ShareDelivery;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ShareConsumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.listener.AcknowledgingShareConsumerAwareMessageListener;
import org.springframework.kafka.listener.DelegatingMessageListener;
import org.springframework.kafka.listener.GenericMessageListener;
import org.springframework.kafka.support.ShareAcknowledgment;

/**
 * The listener Sumi puts in front of a share-group container's own (the {@code @KafkaListener}
 * adapter), in {@code ShareAckMode.MANUAL}: it runs the adapter with the record as this thread's
 * {@link ShareDelivery}, so the {@code @IdempotentHandler} method is guarded with it, and then
 * settles the record itself by how the guarded call ended (docs/kafka-share-groups.md):
 * <ul>
 *   <li>processed, or a duplicate (the handler did not run): {@code ACCEPT};</li>
 *   <li>the handler failed: its claim was released; the record is {@code RELEASE}d (delivered
 *   again, which the broker counts), or, with a recoverer of the application's configured on the
 *   container, the failure goes to the container, which asks the recoverer;</li>
 *   <li>a key that can never run (none, invalid, a rejected fingerprint): {@code REJECT} (archived),
 *   a WARN and a count; with a recoverer of the application's, that recoverer decides (its
 *   dead-letter path);</li>
 *   <li>another consumer holds the key (BUSY), the ledger row awaits reconciliation, or the ledger
 *   is unreachable: the record is <em>held</em>, never released on that account (each release
 *   counts a delivery, and the group archives a record after its delivery limit): Sumi
 *   {@code RENEW}s the record's acquisition lock at once and returns; the renewed record comes
 *   back with the consumer's next poll, its delivery count unchanged, and is claimed again once
 *   the busy policy's retry interval has passed since its renewal. The wait is at the record's
 *   return, not before its renewal, so the held records of one poll wait one interval together:
 *   waiting one interval each before renewing would keep every renewal of a large poll (the
 *   container sends acknowledgements after the poll's last record) waiting for the sum of the
 *   waits, past the locks. A busy key is held while its holder's lease lives
 *   ({@link BusyPolicy#holdingBusyKeysWhileTheirHolderLives()}); a row awaiting reconciliation is
 *   released past the policy's bound, with a WARN;</li>
 *   <li>the handler's budget is open: held the same way for as long as it stays open. A consumer
 *   that renews records acquires nothing new (the client hands the renewed records back instead),
 *   so an open budget stops its consumers acquiring records after the poll that met it, which is
 *   the pause a share container allows (Spring Kafka's cannot be paused).</li>
 * </ul>
 * A listener method that takes the {@link ShareAcknowledgment} itself gets one that settles
 * nothing at once: its {@code acknowledge()} lets the record complete, its {@code release()} or
 * {@code reject()} says the record is not done (the claim is released, not completed), then
 * applied; {@code renew()} inside the handler has no effect (the container sends acknowledgements
 * only after the listener returns).
 *
 * <p>Thread-safe: the container's consumer threads share one instance.
 */
final class SumiShareListener<K, V>
        implements AcknowledgingShareConsumerAwareMessageListener<K, V>, DelegatingMessageListener<Object> {

    private static final Logger log = LoggerFactory.getLogger(SumiShareListener.class);

    /** Holds whose record never came back (its consumer closed) are forgotten after this. */
    private static final Duration FORGET_HOLD_AFTER = Duration.ofHours(1);

    private final GenericMessageListener<?> delegate;
    private final String listenerId;
    private final BusyPolicy busyPolicy;
    private final boolean failuresToRecoverer;
    private final BooleanSupplier running;
    private final ShareMetrics metrics;
    private final ShareRecordObservation observation;
    private final Map<RecordId, Held> holds = new ConcurrentHashMap<>();
    /** {@code false} only in the negative control of the tests: a busy record is released at once. */
    private final boolean holdBusy;

    /**
     * @param failuresToRecoverer whether a failed handler's record, and one whose key can never
     *     run, go to the container's recoverer (the application configured one) instead of being
     *     released or rejected
     */
    SumiShareListener(
            GenericMessageListener<?> delegate,
            String listenerId,
            BusyPolicy busyPolicy,
            boolean failuresToRecoverer,
            BooleanSupplier running,
            ShareMetrics metrics,
            ShareRecordObservation observation) {
        this(delegate, listenerId, busyPolicy, failuresToRecoverer, running, metrics, observation, true);
    }

    SumiShareListener(
            GenericMessageListener<?> delegate,
            String listenerId,
            BusyPolicy busyPolicy,
            boolean failuresToRecoverer,
            BooleanSupplier running,
            ShareMetrics metrics,
            ShareRecordObservation observation,
            boolean holdBusy) {
        this.holdBusy = holdBusy;
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.listenerId = listenerId;
        this.busyPolicy = busyPolicy;
        this.failuresToRecoverer = failuresToRecoverer;
        this.running = running;
        this.metrics = metrics;
        this.observation = observation;
    }

    @Override
    public Object getDelegate() {
        return delegate;
    }

    @Override
    @SuppressWarnings("try") // the observation's scope is open while the record is handled
    public void onShareRecord(
            ConsumerRecord<K, V> record, @Nullable ShareAcknowledgment acknowledgment, ShareConsumer<?, ?> consumer) {
        if (acknowledgment == null) {
            throw new IllegalStateException(
                    "Share-group container '" + listenerId
                            + "' passed no acknowledgment: Sumi runs it in ShareAckMode.MANUAL, which was changed after start-up");
        }
        RecordId id = RecordId.of(record);
        Held held = holds.get(id);
        if (held != null && !awaitRetry(held)) {
            // The container stops (or the thread was interrupted) while the record is held.
            holds.remove(id);
            acknowledge(acknowledgment, AcknowledgeType.RELEASE, deliveries(record));
            return;
        }
        // Spring Kafka's listener observation, which its share container does not open: the
        // consumer span continues the record's trace, and Sumi's handling span is its child.
        Observation recordObservation = observation.start(record);
        try (Observation.Scope scope = recordObservation.openScope()) {
            Call call = new Call();
            Exception failure = null;
            try {
                ShareDelivery.run(record, call, () -> invoke(record, call.listenerAcknowledgment, consumer));
            } catch (Exception ex) {
                failure = ex;
                if (!isHold(call, ex)) {
                    recordObservation.error(ex);
                }
            }
            settle(record, acknowledgment, call, failure);
        } finally {
            recordObservation.stop();
        }
    }

    /**
     * Whether {@code failure} is Sumi holding the record (BUSY, an open budget, a row awaiting
     * reconciliation, the ledger unreachable): Sumi working as meant, not an error of the record.
     */
    private static boolean isHold(Call call, Exception failure) {
        Verdict verdict = call.ran ? null : verdict(Verdict.find(failure));
        return verdict != null && verdict != Verdict.REJECT;
    }

    /** Sumi's verdict in {@code refusal} (a {@code BatchFailedException} stands for its cause). */
    private static @Nullable Verdict verdict(@Nullable RuntimeException refusal) {
        Verdict verdict = Verdict.of(refusal);
        return verdict != null || refusal == null ? verdict : Verdict.of(refusal.getCause());
    }

    @Override
    public void onMessage(ConsumerRecord<K, V> record) {
        throw new UnsupportedOperationException("Sumi's share listener needs the record's acknowledgment");
    }

    @SuppressWarnings("unchecked")
    private void invoke(ConsumerRecord<K, V> record, ShareAcknowledgment acknowledgment, ShareConsumer<?, ?> consumer) {
        if (delegate instanceof AcknowledgingShareConsumerAwareMessageListener<?, ?> acknowledging) {
            ((AcknowledgingShareConsumerAwareMessageListener<K, V>) acknowledging)
                    .onShareRecord(record, acknowledgment, consumer);
        } else {
            ((GenericMessageListener<ConsumerRecord<K, V>>) delegate).onMessage(record);
        }
    }

    private void settle(
            ConsumerRecord<K, V> record, ShareAcknowledgment acknowledgment, Call call, @Nullable Exception failure) {
        RecordId id = RecordId.of(record);
        int deliveries = deliveries(record);
        if (failure == null) {
            // Processed, a duplicate, not done; or the adapter returned without a guarded call (a
            // record filter dropped it), which the container itself would accept.
            holds.remove(id);
            HandlerResult<?> result = call.result;
            AcknowledgeType type = result != null && result.outcome() == MessageOutcome.NOT_DONE
                    ? call.listenerAcknowledgment.notDoneType()
                    : AcknowledgeType.ACCEPT;
            acknowledge(acknowledgment, type, deliveries);
            return;
        }
        RuntimeException refusal = call.ran ? null : Verdict.find(failure);
        if (refusal != null && settleRefusal(record, acknowledgment, id, refusal, deliveries)) {
            return;
        }
        holds.remove(id);
        if (failuresToRecoverer) {
            sneakyThrow(failure); // the container asks the application's recoverer
        }
        log.warn(
                "Share-group listener '{}' failed on the record at {}-{}@{} (delivery {}): released, delivered again",
                listenerId,
                record.topic(),
                record.partition(),
                record.offset(),
                deliveries,
                failure);
        acknowledge(acknowledgment, AcknowledgeType.RELEASE, deliveries);
    }

    /** Settles Sumi's refusal of the record; {@code false}: it is no refusal of Sumi's. */
    private boolean settleRefusal(
            ConsumerRecord<K, V> record,
            ShareAcknowledgment acknowledgment,
            RecordId id,
            RuntimeException refusal,
            int deliveries) {
        Verdict verdict = verdict(refusal);
        if (verdict == null) {
            return false;
        }
        switch (verdict) {
            case REJECT -> {
                holds.remove(id);
                if (failuresToRecoverer) {
                    // The application's dead-letter path: the container asks its recoverer.
                    log.warn(
                            "Share-group listener '{}' cannot run the record at {}-{}@{}: passed to the container's"
                                    + " recoverer: {}",
                            listenerId,
                            record.topic(),
                            record.partition(),
                            record.offset(),
                            refusal.getMessage());
                    sneakyThrow(refusal);
                }
                log.warn(
                        "Share-group listener '{}' rejects the record at {}-{}@{} (archived, not delivered again): {}",
                        listenerId,
                        record.topic(),
                        record.partition(),
                        record.offset(),
                        refusal.getMessage());
                acknowledge(acknowledgment, AcknowledgeType.REJECT, deliveries);
            }
            case BUDGET -> hold(id, holds.computeIfAbsent(id, key -> new Held()), acknowledgment, deliveries);
            default -> { // BUSY, RECONCILE, LEDGER_UNAVAILABLE
                Held held = holds.computeIfAbsent(id, key -> new Held());
                if (holdBusy && held.busy(busyPolicy).keep(refusal, running)) {
                    hold(id, held, acknowledgment, deliveries);
                    return true;
                }
                holds.remove(id);
                log.warn(
                        "Share-group listener '{}' held the record at {}-{}@{} past its bound ({} retries): released,"
                                + " which counts a delivery ({} so far): {}",
                        listenerId,
                        record.topic(),
                        record.partition(),
                        record.offset(),
                        held.busy(busyPolicy).retries(),
                        deliveries,
                        refusal.getMessage());
                metrics.heldPastBound(listenerId);
                acknowledge(acknowledgment, AcknowledgeType.RELEASE, deliveries);
            }
        }
        return true;
    }

    /**
     * Keeps the record: renews its acquisition lock now (sent with the container's next poll); it
     * comes back uncounted and is claimed again one retry interval from now. A container that
     * stops meanwhile gets it released instead.
     */
    private void hold(RecordId id, Held held, ShareAcknowledgment acknowledgment, int deliveries) {
        forgetStaleHolds();
        if (!running.getAsBoolean()) {
            holds.remove(id);
            acknowledge(acknowledgment, AcknowledgeType.RELEASE, deliveries);
            return;
        }
        held.retryAfter(busyPolicy.retryInterval());
        acknowledge(acknowledgment, AcknowledgeType.RENEW, deliveries);
    }

    /** Waits until the held record may be claimed again; {@code false}: the container stops. */
    private boolean awaitRetry(Held held) {
        long wait = held.nanosUntilRetry();
        return wait <= 0 ? running.getAsBoolean() : sleep(Duration.ofNanos(wait));
    }

    private static int deliveries(ConsumerRecord<?, ?> record) {
        return record.deliveryCount().map(Short::intValue).orElse(0);
    }

    private void acknowledge(ShareAcknowledgment acknowledgment, AcknowledgeType type, int deliveries) {
        switch (type) {
            case ACCEPT -> acknowledgment.acknowledge();
            case RELEASE -> acknowledgment.release();
            case REJECT -> acknowledgment.reject();
            case RENEW -> acknowledgment.renew();
            default -> throw new IllegalStateException("Unknown acknowledgement type " + type);
        }
        metrics.acknowledged(listenerId, type, deliveries);
    }

    private boolean sleep(Duration duration) {
        try {
            Thread.sleep(Math.max(1, duration.toMillis()));
            return running.getAsBoolean();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void forgetStaleHolds() {
        long now = System.nanoTime();
        holds.values().removeIf(held -> now - held.startedAt > FORGET_HOLD_AFTER.toNanos());
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> void sneakyThrow(Throwable failure) throws E {
        throw (E) failure;
    }

    /** Where a record is: held records come back as other {@link ConsumerRecord} objects. */
    private record RecordId(String topic, int partition, long offset) {
        static RecordId of(ConsumerRecord<?, ?> record) {
            return new RecordId(record.topic(), record.partition(), record.offset());
        }
    }

    /**
     * A held record: its busy hold (a busy key's bound), when it was first held, and when it may
     * be claimed again. The record comes back to whichever consumer thread of the container
     * acquires it, hence the lock.
     */
    private static final class Held {

        final long startedAt = System.nanoTime();
        private @Nullable BusyHold busy;
        private long retryAt = startedAt;

        synchronized BusyHold busy(BusyPolicy policy) {
            if (busy == null) {
                busy = policy.start();
            }
            return busy;
        }

        synchronized void retryAfter(Duration interval) {
            retryAt = System.nanoTime() + interval.toNanos();
        }

        synchronized long nanosUntilRetry() {
            return retryAt - System.nanoTime();
        }
    }

    /** One guarded call: what the interceptor reported, and the listener's own acknowledgement. */
    private static final class Call implements Settlement {

        final ListenerAcknowledgment listenerAcknowledgment = new ListenerAcknowledgment();

        @Nullable
        HandlerResult<?> result;
        /** Whether the listener method ran before the call failed: if not, Sumi refused the record. */
        boolean ran;

        @Override
        public @Nullable Object returned(@Nullable Object value) throws NotDoneSignal {
            if (listenerAcknowledgment.notDone()) {
                throw NotDoneSignal.of(value);
            }
            return value;
        }

        @Override
        public void settled(HandlerResult<?> result) {
            this.result = result;
        }

        @Override
        public void failed(Throwable failure, boolean ran) {
            this.ran = ran;
        }
    }

    /**
     * The acknowledgment the listener method sees: it records what the method asked, which Sumi
     * applies once the record is settled.
     */
    private static final class ListenerAcknowledgment implements ShareAcknowledgment {

        private volatile @Nullable AcknowledgeType asked;

        @Override
        public void acknowledge() {
            asked = AcknowledgeType.ACCEPT;
        }

        @Override
        public void release() {
            asked = AcknowledgeType.RELEASE;
        }

        @Override
        public void reject() {
            asked = AcknowledgeType.REJECT;
        }

        @Override
        public void renew() {
            // Sent only after the listener returns, when Sumi settles the record anyway.
        }

        boolean notDone() {
            AcknowledgeType type = asked;
            return type == AcknowledgeType.RELEASE || type == AcknowledgeType.REJECT;
        }

        AcknowledgeType notDoneType() {
            AcknowledgeType type = asked;
            return type == AcknowledgeType.REJECT ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE;
        }
    }
}
