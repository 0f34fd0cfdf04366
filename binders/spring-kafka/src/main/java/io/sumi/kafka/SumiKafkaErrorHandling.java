package io.sumi.kafka;

import io.sumi.budget.BudgetExhaustedException;
import io.sumi.consumer.exception.Causes;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.consumer.exception.ListenerStoppingException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import io.sumi.consumer.exception.ReplyTooLargeException;
import io.sumi.consumer.exception.Verdict;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.function.BiFunction;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.AfterRollbackProcessor;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.FailedRecordProcessor;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.ExponentialBackOff;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Teaches a Spring Kafka error handler ({@link DefaultErrorHandler}, or any
 * {@link FailedRecordProcessor}, which includes the {@code DefaultAfterRollbackProcessor} of
 * transactional containers) Sumi's exceptions:
 * <ul>
 *   <li>no key, an invalid key, a rejected fingerprint ({@link MissingIdempotencyKeyException},
 *   {@link InvalidIdempotencyKeyException}, {@link FingerprintMismatchException}): not retryable,
 *   straight to the recoverer (the dead-letter topic with a {@code DeadLetterPublishingRecoverer});</li>
 *   <li>a busy key ({@link MessageBusyException}: another consumer holds a live lease): retried
 *   every {@code busyInterval} <em>without limit</em>. It never reaches the recoverer: the other
 *   consumer completes the message (the retry is then a duplicate and is acknowledged) or its
 *   lease expires (the retry takes the key over). A busy key is never skipped.</li>
 *   <li>a budget refusal ({@link BudgetExhaustedException}): retried every {@code busyInterval}
 *   without limit, so the budget never dead-letters a record. With a {@link BudgetListenerPauser}
 *   such records do not even reach this handler: the container is paused until the budget
 *   half-opens.</li>
 *   <li>an unreachable ledger ({@link LedgerUnavailableException}: Sumi could not write the
 *   record's claim, or a batch's completion, because the ledger's database did not answer):
 *   retried every {@code busyInterval} without limit, like a busy key. It is not the record's
 *   fault, so it never spends the handler's retries nor reaches the recoverer (Spring Kafka's
 *   default recoverer only logs: the record would be lost).</li>
 *   <li>an uncertain outcome ({@link ReconciliationRequiredException}, the ledger row is
 *   {@code RECONCILE}): retried with a back-off that starts at {@code busyInterval} and doubles up
 *   to {@link #RECONCILE_MAX_INTERVAL}, without limit. Nothing runs the message meanwhile; once an
 *   operator completes the row the next retry is a duplicate (acknowledged), once they delete it
 *   the next retry runs it. It is not given to the recoverer, because the recoverer Spring Kafka
 *   uses by default only logs, which would lose the message.</li>
 *   <li>a message its container's stop interrupted ({@link ListenerStoppingException}, thrown by
 *   Sumi's Spring Cloud Stream binder): retried every {@code busyInterval} without limit, never
 *   recovered. The container stops, so Spring Kafka's back-off sleep ends at once and the handler
 *   seeks back to the record: its offset is not committed, the restarted consumer gets it.</li>
 * </ul>
 * Other exceptions keep the handler's own back-off and classification. Spring Kafka's
 * {@code resetStateOnExceptionChange} (on by default) starts a fresh count when the exception
 * changes, so busy retries do not use up a failing handler's attempts either.
 *
 * <pre>{@code
 * @Bean
 * DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
 *     DefaultErrorHandler handler = new DefaultErrorHandler(
 *             new DeadLetterPublishingRecoverer(template), new FixedBackOff(1000, 3));
 *     return SumiKafkaErrorHandling.configure(handler, Duration.ofSeconds(1));
 * }
 * }</pre>
 * The starter applies this to every listener container's error handler (and after-rollback
 * processor) at start-up, whatever it is: a bean, a handler set on the container factory, or none
 * (Spring Kafka's default); a handler it cannot teach fails start-up ({@link #configure(AbstractMessageListenerContainer, Duration)}).
 * Note that Sumi sets the handler's back-off function: a back-off function of your own is replaced.
 */
public final class SumiKafkaErrorHandling {

    /** Whether sumi-budgets (optional for this binder) is on the class path. */
    private static final boolean BUDGETS = ClassUtils.isPresent(
            "io.sumi.budget.BudgetExhaustedException", SumiKafkaErrorHandling.class.getClassLoader());

    /** The default interval between retries of a busy key or a refused budget: 1 second. */
    public static final Duration DEFAULT_BUSY_INTERVAL = Duration.ofSeconds(1);

    /** The longest interval between two retries of a message awaiting reconciliation: 1 minute. */
    public static final Duration RECONCILE_MAX_INTERVAL = Duration.ofMinutes(1);

    private static final Logger log = LoggerFactory.getLogger(SumiKafkaErrorHandling.class);

    /** {@code FailedRecordProcessor.failureTracker} and {@code FailedRecordTracker.noRetries}: private in Spring Kafka. */
    private static final @Nullable Field FAILURE_TRACKER =
            ReflectionUtils.findField(FailedRecordProcessor.class, "failureTracker");

    private SumiKafkaErrorHandling() {}

    /**
     * Classifies Sumi's exceptions on {@code handler}, with the back-offs described above.
     *
     * <p>A handler whose back-off allows no retry at all (such as
     * {@code new DefaultErrorHandler(recoverer, new FixedBackOff(0, 0))}) is taught too: Spring Kafka
     * would consult no back-off function for it and give a busy key to its recoverer at once, so
     * Sumi first makes its failure tracker consult the back-off function ({@link #retryInPlace});
     * Sumi's exceptions are then retried in place as above and every other failure still goes to
     * the recoverer at once. Should that fail (a Spring Kafka whose internals changed), the handler
     * is logged at {@code WARN} here and {@link #configure(AbstractMessageListenerContainer, Duration)}
     * refuses it.
     *
     * @return {@code handler}
     */
    public static <T extends FailedRecordProcessor> T configure(T handler, Duration busyInterval) {
        if (!retryInPlace(handler)) {
            log.warn(withoutRetriesMessage(
                    "The error handler " + handler.getClass().getName()));
        }
        return classify(handler, busyInterval);
    }

    /**
     * A {@link DefaultErrorHandler} that gives every exception except Sumi's retried ones to Spring
     * Kafka's default recoverer (which logs) at once, as {@code new DefaultErrorHandler(new FixedBackOff(0, 0))}
     * does, and retries Sumi's as described above.
     *
     * @see #withoutRetries(ConsumerRecordRecoverer, Duration)
     */
    public static DefaultErrorHandler withoutRetries(Duration busyInterval) {
        return withoutRetries(null, busyInterval);
    }

    /**
     * A {@link DefaultErrorHandler} that gives every exception except Sumi's retried ones to
     * {@code recoverer} at once, as {@code new DefaultErrorHandler(recoverer, new FixedBackOff(0, 0))}
     * does, and retries Sumi's as described above: the "no retries, straight to the dead-letter
     * topic" setup is {@code withoutRetries(new DeadLetterPublishingRecoverer(template), interval)}.
     *
     * <p>Why not teach such a handler: Spring Kafka consults no back-off function when the handler's
     * own back-off allows no retry at all ({@code FixedBackOff(0, 0)}); a busy key would go to the
     * recoverer at once. This handler has a back-off with a retry, and its back-off function stops
     * at once for every other exception (also when it is taught again, e.g. by the starter).
     *
     * @param recoverer {@code null} for Spring Kafka's default, which only logs
     */
    public static DefaultErrorHandler withoutRetries(
            @Nullable ConsumerRecordRecoverer recoverer, Duration busyInterval) {
        return classify(new WithoutRetries(recoverer), busyInterval);
    }

    /** The handler {@link #withoutRetries} builds: recognised when it is taught again, so that it keeps stopping at once. */
    private static final class WithoutRetries extends DefaultErrorHandler {

        WithoutRetries(@Nullable ConsumerRecordRecoverer recoverer) {
            super(recoverer, new FixedBackOff(0, 1));
        }
    }

    /**
     * Whether Spring Kafka consults the back-off function of {@code handler}: its failure tracker
     * fixes a final {@code noRetries} from the constructor's back-off and, when it is set, recovers
     * every failure at once. Fail safe: {@code false} if the field cannot be read (a Spring Kafka
     * that renamed it), so such a handler is refused rather than taught to no effect.
     */
    static boolean allowsRetries(FailedRecordProcessor handler) {
        try {
            NoRetriesFlag noRetries = noRetriesFlag(handler);
            // A boolean field reads as a Boolean, never null; were it null, no retries are assumed.
            return noRetries != null
                    && ReflectionUtils.getField(noRetries.field(), noRetries.tracker()) instanceof Boolean none
                    && !none;
        } catch (RuntimeException ex) {
            return false;
        }
    }

    /**
     * Makes {@code handler} consult its back-off function even when its own back-off allows no
     * retry, so that Sumi's retried exceptions are retried in place whatever the back-off: Spring
     * Kafka's failure tracker fixes a final {@code noRetries} from the constructor's back-off and
     * then recovers every failure at once, consulting nothing. Cleared here (by reflection, as it
     * is read), every other failure still ends at once: the back-off function answers
     * {@code null} for it, so the tracker uses the handler's own back-off, which stops before the
     * first retry, and gives the record to the recoverer as before.
     *
     * @return whether the handler now consults its back-off function (fail safe: {@code false}
     *     when the field cannot be read or written, e.g. a Spring Kafka that renamed it)
     */
    static boolean retryInPlace(FailedRecordProcessor handler) {
        if (allowsRetries(handler)) {
            return true;
        }
        try {
            NoRetriesFlag noRetries = noRetriesFlag(handler);
            if (noRetries == null) {
                return false;
            }
            noRetries.field().setBoolean(noRetries.tracker(), false);
        } catch (RuntimeException | IllegalAccessException ex) {
            return false;
        }
        return allowsRetries(handler);
    }

    /** The {@code noRetries} field of a handler's failure tracker, made accessible, and the tracker that holds it. */
    private record NoRetriesFlag(Object tracker, Field field) {}

    /**
     * The {@code noRetries} flag of {@code handler}'s failure tracker, or {@code null} if this
     * Spring Kafka has no such field (renamed).
     *
     * @throws RuntimeException if reflection is refused
     */
    private static @Nullable NoRetriesFlag noRetriesFlag(FailedRecordProcessor handler) {
        if (FAILURE_TRACKER == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(FAILURE_TRACKER);
        Object tracker = ReflectionUtils.getField(FAILURE_TRACKER, handler);
        if (tracker == null) {
            return null;
        }
        Field noRetries = ReflectionUtils.findField(tracker.getClass(), "noRetries", boolean.class);
        if (noRetries == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(noRetries);
        return new NoRetriesFlag(tracker, noRetries);
    }

    private static <T extends FailedRecordProcessor> T classify(T handler, Duration busyInterval) {
        // The handler withoutRetries builds stops at once for other exceptions, however often it is taught.
        @Nullable BackOff otherwise = handler instanceof WithoutRetries ? new FixedBackOff(0, 0) : null;
        handler.addNotRetryableExceptions(
                MissingIdempotencyKeyException.class,
                InvalidIdempotencyKeyException.class,
                FingerprintMismatchException.class,
                ReplyTooLargeException.class);
        // Classified retryable explicitly, because a not-retryable classification wins over the back-off
        // function: a handler whose classifications default to false (the one @RetryableTopic /
        // non-blocking retries install on every container) would otherwise give a busy key to its
        // recoverer at once, i.e. forward it through the retry topics to the DLT although it never
        // failed. (ReconciliationRequiredException was not retryable in earlier versions.)
        handler.addRetryableExceptions(
                MessageBusyException.class,
                ReconciliationRequiredException.class,
                LedgerUnavailableException.class,
                ListenerStoppingException.class);
        if (BUDGETS) {
            // Only named where sumi-budgets is on the class path (it is optional here).
            handler.addRetryableExceptions(BudgetExhaustedException.class);
        }
        long interval = Math.max(1, busyInterval.toMillis());
        FixedBackOff unlimited = new FixedBackOff(interval, FixedBackOff.UNLIMITED_ATTEMPTS);
        ExponentialBackOff reconcile = new ExponentialBackOff(interval, 2.0);
        reconcile.setMaxInterval(Math.max(interval, RECONCILE_MAX_INTERVAL.toMillis()));
        reconcile.setMaxElapsedTime(Long.MAX_VALUE);
        BiFunction<ConsumerRecord<?, ?>, Exception, @Nullable BackOff> function = (record, ex) -> {
            if (refusedBudget(ex)
                    || find(ex, MessageBusyException.class)
                    || find(ex, LedgerUnavailableException.class)
                    || find(ex, ListenerStoppingException.class)) {
                return unlimited;
            }
            return find(ex, ReconciliationRequiredException.class) ? reconcile : otherwise;
        };
        handler.setBackOffFunction(function);
        return handler;
    }

    /**
     * Makes sure {@code container} handles Sumi's exceptions as described above, whatever error
     * handler it has: none (Spring Kafka's default, which retries 10 times at once and then only
     * logs) gets a {@link DefaultErrorHandler} taught by {@link #configure(FailedRecordProcessor, Duration)};
     * a {@link FailedRecordProcessor}, or one inside a {@link BudgetAwareErrorHandler}, is taught;
     * a transactional container's after-rollback processor likewise.
     *
     * @throws IllegalStateException if the error handler (or, for a transactional container, the
     *     after-rollback processor) is one Sumi cannot teach, including a {@link FailedRecordProcessor}
     *     whose back-off allows no retry; the message says what to do
     */
    public static void configure(AbstractMessageListenerContainer<?, ?> container, Duration busyInterval) {
        CommonErrorHandler handler = container.getCommonErrorHandler();
        if (handler == null) {
            container.setCommonErrorHandler(configure(new DefaultErrorHandler(), busyInterval));
        } else if (!teach(container, handler, busyInterval)) {
            throw cannotTeach(container, "error handler", handler);
        }
        AfterRollbackProcessor<?, ?> rollback = container.getAfterRollbackProcessor();
        if (rollback instanceof FailedRecordProcessor processor && retryInPlace(processor)) {
            classify(processor, busyInterval);
        } else if (rollback instanceof FailedRecordProcessor processor && isTransactional(container)) {
            throw new IllegalStateException(withoutRetriesMessage(
                    "Kafka listener container '" + container.getListenerId() + "' has the after-rollback processor "
                            + processor.getClass().getName() + ", which"));
        } else if (rollback != null && isTransactional(container)) {
            throw cannotTeach(container, "after-rollback processor", rollback);
        }
    }

    private static boolean teach(
            AbstractMessageListenerContainer<?, ?> container, CommonErrorHandler handler, Duration busyInterval) {
        if (handler instanceof FailedRecordProcessor processor) {
            if (!retryInPlace(processor)) {
                throw new IllegalStateException(withoutRetriesMessage(
                        "Kafka listener container '" + container.getListenerId() + "' has the error handler "
                                + processor.getClass().getName() + ", which"));
            }
            classify(processor, busyInterval);
            return true;
        }
        return BUDGETS
                && handler instanceof BudgetAwareErrorHandler aware
                && teach(container, aware.delegate(), busyInterval);
    }

    @SuppressWarnings("removal")
    static boolean isTransactional(AbstractMessageListenerContainer<?, ?> container) {
        return container.getContainerProperties().getKafkaAwareTransactionManager() != null
                || container.getContainerProperties().getTransactionManager() != null;
    }

    private static IllegalStateException cannotTeach(
            AbstractMessageListenerContainer<?, ?> container, String what, Object handler) {
        return new IllegalStateException(
                "Kafka listener container '" + container.getListenerId() + "' has the " + what + " "
                        + handler.getClass().getName()
                        + ", which Sumi cannot teach its exceptions: with it, a message whose key another"
                        + " consumer holds (MessageBusyException) or whose budget is spent (BudgetExhaustedException) could be skipped."
                        + " Use a DefaultErrorHandler (or another FailedRecordProcessor) with your recoverer and back-off, and Sumi"
                        + " classifies its exceptions on it; or set sumi.kafka.configure-error-handlers=false and classify them yourself"
                        + " (see docs/kafka-error-handling.md)");
    }

    private static String withoutRetriesMessage(String subject) {
        return subject
                + " allows no retry (a back-off such as FixedBackOff(0, 0)), so Sumi cannot teach it its exceptions:"
                + " Spring Kafka then gives every failure to the recoverer at once, including a message whose key another"
                + " consumer holds (MessageBusyException), whose budget is spent (BudgetExhaustedException) or which awaits"
                + " reconciliation (ReconciliationRequiredException), which would be dead-lettered or skipped. Use"
                + " SumiKafkaErrorHandling.withoutRetries(recoverer, interval) instead (your exceptions still go to your"
                + " recoverer at once), or give it a back-off with at least one retry; Sumi then retries busy keys without"
                + " limit and your exceptions go to the recoverer per your back-off (see docs/kafka-error-handling.md)";
    }

    static boolean find(@Nullable Throwable ex, Class<? extends Throwable> type) {
        return Causes.find(ex, type).isPresent();
    }

    /** Whether a budget refusal ({@link Verdict#BUDGET}, sumi-budgets) is in {@code ex}'s cause chain. */
    static boolean refusedBudget(@Nullable Throwable ex) {
        for (Throwable t : Causes.chain(ex)) {
            if (Verdict.of(t) == Verdict.BUDGET) {
                return true;
            }
        }
        return false;
    }
}
