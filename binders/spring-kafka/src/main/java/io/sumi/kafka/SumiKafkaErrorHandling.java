package io.sumi.kafka;

import io.sumi.consumer.FingerprintMismatchException;
import io.sumi.consumer.InvalidIdempotencyKeyException;
import io.sumi.consumer.MessageBusyException;
import io.sumi.consumer.MissingIdempotencyKeyException;
import io.sumi.consumer.ReconciliationRequiredException;
import io.sumi.consumer.budget.BudgetExhaustedException;
import java.time.Duration;
import java.util.function.BiFunction;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Teaches a {@link DefaultErrorHandler} Sumi's exceptions:
 * <ul>
 *   <li>no key, an oversized key, a rejected fingerprint: not retryable, straight to the recoverer
 *   (the dead-letter topic with a {@code DeadLetterPublishingRecoverer});</li>
 *   <li>a busy key (another consumer holds a live lease): retried every {@code busyInterval} for up
 *   to {@code busyMaxWait} (set it above the lease: by then the other consumer has completed the
 *   message, which then is a duplicate, or its lease has expired and this consumer takes over);
 *   other exceptions keep the handler's own back-off;</li>
 *   <li>an uncertain outcome ({@link ReconciliationRequiredException}): not retryable, to the
 *   recoverer, where it waits next to its {@code RECONCILE} ledger row;</li>
 *   <li>a budget refusal ({@link BudgetExhaustedException}): retried every {@code busyInterval}
 *   without limit, so the budget never dead-letters a record. With a {@link BudgetListenerPauser}
 *   (the starter installs one when budgets are configured) such records do not even reach this
 *   handler: the container is paused until the budget half-opens.</li>
 * </ul>
 *
 * <pre>{@code
 * @Bean
 * DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
 *     DefaultErrorHandler handler = new DefaultErrorHandler(
 *             new DeadLetterPublishingRecoverer(template), new FixedBackOff(1000, 3));
 *     return SumiKafkaErrorHandling.configure(handler, Duration.ofSeconds(1), Duration.ofMinutes(6));
 * }
 * }</pre>
 * The starter applies this to every {@code DefaultErrorHandler} bean ({@code sumi.kafka.configure-error-handlers}).
 */
public final class SumiKafkaErrorHandling {

    private SumiKafkaErrorHandling() {
    }

    /**
     * Classifies Sumi's exceptions on {@code handler}, with the back-off for busy keys described above.
     *
     * @return {@code handler}
     */
    public static DefaultErrorHandler configure(DefaultErrorHandler handler, Duration busyInterval, Duration busyMaxWait) {
        handler.addNotRetryableExceptions(MissingIdempotencyKeyException.class, InvalidIdempotencyKeyException.class,
                FingerprintMismatchException.class, ReconciliationRequiredException.class);
        long attempts = Math.max(1, busyMaxWait.toMillis() / Math.max(1, busyInterval.toMillis()));
        FixedBackOff busyBackOff = new FixedBackOff(busyInterval.toMillis(), attempts);
        FixedBackOff budgetBackOff = new FixedBackOff(busyInterval.toMillis(), FixedBackOff.UNLIMITED_ATTEMPTS);
        BiFunction<ConsumerRecord<?, ?>, Exception, @Nullable BackOff> function = (record, ex) ->
                BudgetExhaustedException.find(ex).isPresent() ? budgetBackOff : isBusy(ex) ? busyBackOff : null;
        handler.setBackOffFunction(function);
        return handler;
    }

    private static boolean isBusy(@Nullable Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof MessageBusyException) {
                return true;
            }
        }
        return false;
    }
}
