package io.sumi.rabbit;

import com.rabbitmq.client.Channel;
import io.sumi.consumer.binder.BusyHold;
import io.sumi.consumer.binder.BusyPolicy;
import io.sumi.consumer.binder.ListenerPauser;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.Verdict;
import io.sumi.rabbit.internal.CurrentDelivery;
import io.sumi.rabbit.internal.DeadLetterTargets;
import io.sumi.rabbit.internal.DeadLetterTargets.DeadLetterTarget;
import io.sumi.rabbit.internal.RepeatableProceedAdvice;
import io.sumi.rabbit.internal.SettlingChannel;
import java.io.IOException;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.AmqpRejectAndDontRequeueException;
import org.springframework.amqp.ImmediateRequeueAmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.util.ReflectionUtils;

/**
 * The two advices Sumi puts around a listener container's {@code invokeListener}, outside and
 * inside the application's own advice chain ({@link #wrap}):
 * <ul>
 *   <li>the <em>outer</em> advice records the message or consumer batch being delivered (so a
 *   listener method with any parameter style finds its key) and turns Sumi's verdict into what
 *   RabbitMQ understands;</li>
 *   <li>the <em>inner</em> advice takes Sumi's own exceptions away from the application's advices,
 *   so that a retry interceptor (Boot's {@code spring.rabbitmq.listener.*.retry}, a
 *   {@code RetryInterceptorBuilder}) never retries or "recovers" (dead-letters) them. Exceptions of
 *   the handler pass through untouched: the application's retry and recoverer, or the container's
 *   {@code defaultRequeueRejected}, decide about them; the handler's claim has been released.</li>
 * </ul>
 *
 * <p>With MANUAL acknowledgement the listener gets a {@link SettlingChannel} over the channel: its
 * settlements of the delivery wait until Sumi's ledger work is done, and a nack or reject makes the
 * message not done (released, never completed). Sumi settles a refused MANUAL delivery itself, tag
 * by tag, never with {@code multiple=true} (which would also settle the application's own
 * unacknowledged deliveries).
 *
 * <p>Verdicts (AUTO and MANUAL acknowledgement alike):
 * <ul>
 *   <li>no key, an invalid key, a rejected fingerprint, a reply too large to keep: rejected without requeue, so the queue's
 *   dead-letter exchange gets it (RabbitMQ adds {@code x-death} with reason {@code rejected}; Sumi
 *   logs why at WARN). In a consumer batch only that message is rejected; the messages before it
 *   are done and the batch is requeued (the done ones are skipped as duplicates on redelivery).</li>
 *   <li>a busy key (another consumer holds a live lease) or a message awaiting reconciliation,
 *   refused by the listener method's own guard: held by the consumer thread and run again in place
 *   under the core's {@link BusyPolicy}, with no requeue (quorum queues count every requeue toward
 *   {@code x-delivery-limit}): a busy key at least until the holder's lease it met has ended by the
 *   database's clock (then it is claimed and run, or a duplicate) and the policy's least wait;
 *   a reconciliation row for the least wait. Past that bound, or when the container stops, or for a
 *   refusal by a guarded method the listener calls (after the listener's own work), the consumer
 *   thread waits the retry interval and the delivery is requeued: one delivery the broker counts.
 *   A consumer batch is held alike (its done messages are duplicates on the next run).</li>
 *   <li>a spent budget: the container is stopped (on another thread) by the
 *   {@link RabbitBudgetListenerStopper} and the delivery requeued; the stopper starts the container
 *   again when the budget's breaker half-opens.</li>
 * </ul>
 * Thread-safe; one instance per container.
 */
public final class SumiRabbitContainerAdvice {

    /** The default wait before a busy key is requeued: 1 second. */
    public static final Duration DEFAULT_BUSY_INTERVAL = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(SumiRabbitContainerAdvice.class);

    private final AbstractMessageListenerContainer container;
    private final BusyPolicy busyPolicy;
    private final @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper;
    private final DeadLetterTargets deadLetterTargets = new DeadLetterTargets();

    /** {@code AbstractMessageListenerContainer.adviceChain}: its getter is protected. */
    private static final @Nullable Field ADVICE_CHAIN =
            ReflectionUtils.findField(AbstractMessageListenerContainer.class, "adviceChain");

    private static final DefaultMessagePropertiesConverter PROPERTIES = new DefaultMessagePropertiesConverter();

    /**
     * An advice with the core's default least hold ({@link BusyPolicy#DEFAULT_MAX_WAIT}).
     *
     * @param busyInterval the wait between two runs of a held delivery (a zero wait is taken as 1 ms)
     */
    public SumiRabbitContainerAdvice(
            AbstractMessageListenerContainer container,
            Duration busyInterval,
            @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper) {
        this(container, policy(busyInterval), budgetStopper);
    }

    /**
     * @param busyPolicy how busy keys and rows awaiting reconciliation are held in place
     * @since 0.1.0
     */
    public SumiRabbitContainerAdvice(
            AbstractMessageListenerContainer container,
            BusyPolicy busyPolicy,
            @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper) {
        this.container = Objects.requireNonNull(container, "container");
        this.busyPolicy = Objects.requireNonNull(busyPolicy, "busyPolicy");
        this.budgetStopper = budgetStopper;
    }

    static BusyPolicy policy(Duration busyInterval) {
        if (busyInterval.isNegative()) {
            throw new IllegalArgumentException("busyInterval must not be negative, was " + busyInterval);
        }
        return BusyPolicy.of(busyInterval.isZero() ? Duration.ofMillis(1) : busyInterval, BusyPolicy.DEFAULT_MAX_WAIT);
    }

    /**
     * The advice chain for {@code container}: Sumi's outer advice, the application's advices (the
     * container factory's chain), Sumi's inner advice. Sumi's advices already in {@code chain} are
     * dropped, so wrapping twice is harmless. Each application advice that proceeds more than once
     * (a retry interceptor such as Boot's {@code spring.rabbitmq.listener.*.retry}) runs the rest
     * of the chain, Sumi's inner advice included, on every attempt: Spring AMQP 4's stateless retry
     * interceptor calls {@code proceed()} again on the invocation it was given, which would
     * otherwise skip every advice after it from the second attempt on.
     */
    public static Advice[] wrap(
            AbstractMessageListenerContainer container,
            Advice @Nullable [] chain,
            Duration busyInterval,
            @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper) {
        return wrap(container, chain, policy(busyInterval), budgetStopper);
    }

    /**
     * {@link #wrap(AbstractMessageListenerContainer, Advice[], Duration, ListenerPauser)}
     * with a busy policy.
     *
     * @since 0.1.0
     */
    public static Advice[] wrap(
            AbstractMessageListenerContainer container,
            Advice @Nullable [] chain,
            BusyPolicy busyPolicy,
            @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper) {
        if (container.getMessageListener() != null) {
            // The container shows what its listener's method does not: a consumer batch.
            AsyncBatchListenerCheck.check(container);
        }
        SumiRabbitContainerAdvice advice = new SumiRabbitContainerAdvice(container, busyPolicy, budgetStopper);
        List<Advice> advices = new ArrayList<>();
        advices.add(advice.new Outer());
        if (chain != null) {
            // Each application advice may proceed more than once (a retry interceptor does): every
            // proceed must pass the rest of the chain, Sumi's inner advice included.
            Arrays.stream(chain)
                    .filter(a -> !(a instanceof Outer) && !(a instanceof Inner))
                    .map(RepeatableProceedAdvice::of)
                    .forEach(advices::add);
        }
        advices.add(new Inner());
        return advices.toArray(Advice[]::new);
    }

    /**
     * Checks, before {@code container} starts, that Sumi can run its listener if the container
     * carries Sumi's advice: a consumer-batch container's {@code @IdempotentHandler} listener must
     * not return a {@code CompletableFuture} or {@code Mono} (a batch completes when the method
     * returns). {@link #wrap} checks a container that has its listener already; the starter calls
     * this for every listener container bean, whose listener may be set after {@link #wrap}.
     *
     * @throws IllegalStateException if Sumi cannot run the container's listener, saying why and what to do
     * @since 0.1.0
     */
    public static void checkListener(AbstractMessageListenerContainer container) {
        if (ADVICE_CHAIN == null) {
            return;
        }
        ReflectionUtils.makeAccessible(ADVICE_CHAIN);
        if (ReflectionUtils.getField(ADVICE_CHAIN, container) instanceof Advice[] chain
                && Arrays.stream(chain).anyMatch(Outer.class::isInstance)) {
            AsyncBatchListenerCheck.check(container);
        }
    }

    /** Records the delivery and acts on Sumi's verdict. */
    final class Outer implements MethodInterceptor {

        @Override
        public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
            Object[] args = invocation.getArguments();
            @Nullable Object data = args.length > 1 ? args[1] : null;
            Channel channel = args.length > 0 && args[0] instanceof Channel c ? c : null;
            if (data == null) {
                return invocation.proceed();
            }
            CurrentDelivery.set(data);
            SettlingChannel settling = null;
            if (channel != null
                    && container.getAcknowledgeMode().isManual()
                    && invocation instanceof ProxyMethodInvocation proxied) {
                // The listener's own acks, nacks and rejects of this delivery wait until Sumi's ledger
                // work is done (a nack is not success; an ack must not precede Sumi's commit).
                settling = SettlingChannel.of(channel, tags(data));
                Object[] wrapped = args.clone();
                wrapped[0] = settling.channel();
                proxied.setArguments(wrapped);
                CurrentDelivery.settling(settling);
            }
            try {
                BusyHold hold = busyPolicy.start();
                // Messages the listener saw in an earlier run of a held delivery: acknowledged by it.
                Set<Message> seen = Collections.newSetFromMap(new IdentityHashMap<>());
                // Cloned before it proceeds: a clone starts at this advice, so a run in place passes
                // the application's advices and Sumi's inner one again.
                ProxyMethodInvocation fresh = invocation instanceof ProxyMethodInvocation proxied
                        ? (ProxyMethodInvocation) proxied.invocableClone()
                        : null;
                MethodInvocation run = invocation;
                while (true) {
                    Object result;
                    try {
                        result = run.proceed();
                    } catch (Throwable ex) {
                        release(settling, ex);
                        throw ex;
                    }
                    RuntimeException verdict = CurrentDelivery.takeVerdict();
                    boolean entry = verdict != null && CurrentDelivery.takeEntryRefusal(verdict);
                    List<Message> skipped = CurrentDelivery.takeSkipped();
                    if (verdict != null && entry && fresh != null && hold.retry(verdict, container::isRunning)) {
                        // The core's busy policy: held and run again in place, no requeue (a quorum
                        // queue counts requeues toward x-delivery-limit). A clone can proceed again.
                        if (data instanceof List<?> batch) {
                            batch.stream()
                                    .filter(m -> m instanceof Message && !skipped.contains(m))
                                    .forEach(m -> seen.add((Message) m));
                        }
                        run = fresh.invocableClone();
                        continue;
                    }
                    if (verdict != null
                            && fresh != null
                            && data instanceof List<?> batch
                            && deadLetterInTransaction(verdict, channel, batch)) {
                        // A channel-transacted container: the refused message went to the dead-letter
                        // exchange inside the channel's transaction (acknowledged with the batch);
                        // the others run again in place (the done ones are duplicates now).
                        int refused = ((BatchFailedException) verdict).index();
                        List<Object> rest = new ArrayList<>(batch);
                        rest.remove(refused);
                        data = rest;
                        CurrentDelivery.set(rest);
                        ProxyMethodInvocation next = (ProxyMethodInvocation) fresh.invocableClone();
                        Object[] nextArgs = next.getArguments().clone();
                        nextArgs[1] = rest;
                        next.setArguments(nextArgs);
                        // A later run in place (a busy key) starts from the batch without it, too.
                        fresh = next;
                        run = next.invocableClone();
                        continue;
                    }
                    if (settling != null) {
                        settling.release();
                    }
                    if (verdict != null) {
                        act(verdict, channel, data, settling);
                        return result; // MANUAL: act settled every message of the delivery
                    }
                    acknowledgeSkipped(channel, skipped, seen, settling);
                    return result;
                }
            } finally {
                CurrentDelivery.clear();
            }
        }
    }

    /**
     * With MANUAL acknowledgement the listener acknowledges what it saw; the duplicates Sumi kept
     * from it are acknowledged here, or they would stay unacknowledged until the channel closes.
     */
    private void acknowledgeSkipped(
            @Nullable Channel channel, List<Message> skipped, Set<Message> seen, @Nullable SettlingChannel settling)
            throws IOException {
        if (channel == null
                || skipped.isEmpty()
                || !container.getAcknowledgeMode().isManual()) {
            return;
        }
        for (Message message : skipped) {
            if (seen.contains(message)
                    || (settling != null
                            && settling.settled(message.getMessageProperties().getDeliveryTag()))) {
                continue; // the listener saw it (in an earlier run of this delivery) and settled it
            }
            channel.basicAck(message.getMessageProperties().getDeliveryTag(), false);
        }
    }

    /** Takes Sumi's exceptions away from the application's advices. */
    static final class Inner implements MethodInterceptor {

        @Override
        public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
            try {
                return invocation.proceed();
            } catch (RuntimeException ex) {
                RuntimeException verdict = verdict(ex);
                if (verdict == null) {
                    throw ex;
                }
                CurrentDelivery.verdict(verdict);
                return null;
            }
        }
    }

    /** Sumi's exception in {@code failure}'s cause chain (a batch failure caused by one included), or {@code null}. */
    static @Nullable RuntimeException verdict(Throwable failure) {
        return Verdict.find(failure);
    }

    private static boolean rejected(@Nullable Throwable t) {
        return Verdict.of(t) == Verdict.REJECT;
    }

    private void act(
            RuntimeException verdict, @Nullable Channel channel, Object data, @Nullable SettlingChannel settling)
            throws IOException {
        Throwable cause =
                verdict instanceof BatchFailedException batch && batch.getCause() != null ? batch.getCause() : verdict;
        List<?> batch = data instanceof List<?> list ? list : null;
        int index = verdict instanceof BatchFailedException failed ? failed.index() : -1;
        List<?> messages = batch != null ? batch : List.of(data);
        if (rejected(cause)) {
            String reason = "Sumi rejected a message of queue(s) " + Arrays.toString(container.getQueueNames())
                    + " without requeue (to the dead-letter exchange, if the queue has one): " + cause.getMessage();
            log.warn(reason);
            if (settling != null) {
                // MANUAL: an exception would make the container nack with multiple=true, which also
                // settles the application's own unacknowledged earlier deliveries. One by one instead.
                settleEach(
                        settling.target(), messages, batch == null ? 0 : index, index < 0 && batch != null, settling);
                return;
            }
            if (batch == null || batch.size() == 1 || channel == null || index < 0) {
                throw new AmqpRejectAndDontRequeueException(reason, true, cause);
            }
            settleBatchRejection(channel, batch, index, reason, cause);
            return;
        }
        if (Verdict.of(cause) == Verdict.BUDGET) {
            if (budgetStopper != null) {
                budgetStopper.pauseFor(container, cause);
            } else {
                sleep();
            }
            if (settling != null) {
                settleEach(settling.target(), messages, -1, false, settling);
                return;
            }
            String why = "the budget refused the call (" + cause.getMessage() + ")";
            ImmediateRequeueAmqpException requeue = requeue(why, cause);
            if (batch != null) {
                // A consumer batch's exception that is not a ListenerExecutionFailedException ends
                // the consumer, which the container then restarts on its own. That restart raced the
                // stopper's stop: when the whole stop ran between the consumer thread's decision to
                // restart and the restart itself, the stop had cleared the container's consumers and
                // the restart skipped stopping the old consumer, whose channel then stayed open with
                // the requeued batch (and the rest of its prefetch) unacknowledged: after the resume
                // it never came back. Wrapped, the consumer stays, as after a handler's failure, and
                // the container's rollback still requeues. RabbitBatchBudgetStopRaceIntegrationTests
                // forces that interleaving.
                throw SpringAmqpLines.listenerExecutionFailed(
                        "Sumi requeues the batch: " + why, requeue, batch.toArray(Message[]::new));
            }
            throw requeue;
        }
        // Past the busy policy's bound, or refused by a guarded method the listener called (after
        // the listener's own work, which only a redelivery redoes): back to the broker.
        sleep();
        if (settling != null) {
            settleEach(settling.target(), messages, -1, false, settling);
            return;
        }
        throw requeue(cause.getMessage(), cause);
    }

    /**
     * MANUAL acknowledgement: settles the messages of the delivery the listener did not settle, each
     * by its own tag (never {@code multiple=true}, which would also settle the application's own
     * unacknowledged deliveries): the one at {@code refused} (or all, {@code rejectAll}) rejected
     * without requeue, the others requeued.
     */
    private static void settleEach(
            Channel channel, List<?> messages, int refused, boolean rejectAll, SettlingChannel settling)
            throws IOException {
        for (int i = 0; i < messages.size(); i++) {
            long tag = tag(messages.get(i));
            if (settling.settled(tag)) {
                continue;
            }
            if (rejectAll || i == refused) {
                channel.basicReject(tag, false);
            } else {
                channel.basicNack(tag, false, true);
            }
        }
    }

    /**
     * On a channel-transacted container (or one with a transaction manager) a reject is undone by
     * the container's rollback and the batch comes back for ever. So a message of a consumer batch
     * that Sumi rejects is published to its queue's dead-letter exchange on the delivery's own
     * channel, inside the channel's transaction, with Sumi's reason headers: it commits with the
     * acknowledgement of the batch, atomically. Only the consumer batch needs it (a single message
     * is rejected by the container's own rollback handling, which a rollback does not undo).
     *
     * @return whether it was dead-lettered so; {@code false} when this does not apply, or when the
     *     queue's dead-letter exchange is unknown (logged at ERROR: the batch is then requeued after
     *     the retry interval, each time with that ERROR)
     */
    private boolean deadLetterInTransaction(RuntimeException verdict, @Nullable Channel channel, List<?> batch)
            throws IOException {
        if (channel == null
                || !container.isChannelTransacted()
                || container.getAcknowledgeMode().isManual()
                || !(verdict instanceof BatchFailedException failed)
                || failed.index() < 0
                || failed.index() >= batch.size()
                || batch.size() < 2) {
            return false;
        }
        Throwable cause = failed.getCause() != null ? failed.getCause() : failed;
        if (!rejected(cause)) {
            return false;
        }
        Message message = (Message) batch.get(failed.index());
        String queue = message.getMessageProperties().getConsumerQueue();
        DeadLetterTarget target = queue == null ? null : deadLetterTargets.find(container, queue, message);
        if (target == null || queue == null) {
            log.error(
                    "Sumi cannot dead-letter a refused message of a consumer batch on channel-transacted container"
                            + " for queue {}: the container's rollback undoes a reject, and the queue has no"
                            + " x-dead-letter-exchange argument in a Queue bean of the application context. Declare"
                            + " the queue (with its dead-letter exchange) as a bean. The batch is requeued after {}: {}",
                    queue,
                    busyPolicy.retryInterval(),
                    cause.getMessage());
            return false;
        }
        String reason = "Sumi rejected a message of queue " + queue + " (a consumer batch on a channel-transacted"
                + " container: published to the dead-letter exchange " + target.exchange() + "): "
                + cause.getMessage();
        log.warn(reason);
        MessageProperties properties = message.getMessageProperties();
        properties.setHeader("x-sumi-rejected-reason", String.valueOf(cause.getMessage()));
        properties.setHeader("x-sumi-rejected-queue", queue);
        properties.setHeader("x-first-death-reason", "rejected");
        properties.setHeader("x-first-death-queue", queue);
        channel.basicPublish(
                target.exchange(),
                target.routingKey(),
                false,
                PROPERTIES.fromMessageProperties(properties, "UTF-8"),
                message.getBody());
        return true;
    }

    /** The delivery tags of a message or consumer batch. */
    private static Set<Long> tags(Object data) {
        Set<Long> tags = new HashSet<>();
        if (data instanceof List<?> list) {
            list.forEach(m -> tags.add(tag(m)));
        } else {
            tags.add(tag(data));
        }
        return tags;
    }

    /** Passes on the listener's held settlements after a failed run, keeping {@code failure} the exception. */
    private static void release(@Nullable SettlingChannel settling, Throwable failure) {
        if (settling == null) {
            return;
        }
        try {
            settling.release();
        } catch (Exception ex) {
            failure.addSuppressed(ex);
        }
    }

    /**
     * The message at {@code index} goes to the dead-letter exchange and the others of the batch are
     * requeued. The container settles the batch by its highest delivery tag (with
     * {@code multiple=true}), which must still be outstanding then: the other messages are settled
     * here, the last one by the exception.
     */
    private static void settleBatchRejection(Channel channel, List<?> batch, int index, String reason, Throwable cause)
            throws IOException {
        int last = batch.size() - 1;
        if (index == last) {
            // Requeue everything before it, then let the container reject the last one.
            channel.basicNack(tag(batch.get(last - 1)), true, true);
            throw new AmqpRejectAndDontRequeueException(reason, true, cause);
        }
        channel.basicReject(tag(batch.get(index)), false);
        throw requeue("the rest of a batch with a rejected message", cause);
    }

    private static long tag(Object message) {
        return ((Message) message).getMessageProperties().getDeliveryTag();
    }

    /** Requeue, in AUTO and MANUAL mode (the inner exception makes a MANUAL container settle it). */
    private static ImmediateRequeueAmqpException requeue(@Nullable String why, Throwable cause) {
        String message = "Sumi requeues the delivery: " + why;
        return new ImmediateRequeueAmqpException(message, new AmqpRejectAndDontRequeueException(message, true, cause));
    }

    private void sleep() {
        try {
            Thread.sleep(busyPolicy.retryInterval().toMillis());
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
