package io.sumi.jms;

import io.sumi.consumer.binder.BusyHold;
import io.sumi.consumer.binder.ListenerPauser;
import io.sumi.consumer.exception.Verdict;
import io.sumi.jms.internal.CurrentJmsDelivery;
import jakarta.jms.BytesMessage;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Destination;
import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import jakarta.jms.MessageListener;
import jakarta.jms.MessageProducer;
import jakarta.jms.ObjectMessage;
import jakarta.jms.Session;
import jakarta.jms.StreamMessage;
import jakarta.jms.TextMessage;
import java.lang.reflect.Method;
import java.util.Enumeration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.Lifecycle;
import org.springframework.jms.listener.AbstractMessageListenerContainer;
import org.springframework.jms.listener.AbstractPollingMessageListenerContainer;
import org.springframework.jms.listener.DefaultMessageListenerContainer;
import org.springframework.jms.listener.SessionAwareMessageListener;
import org.springframework.jms.listener.SubscriptionNameProvider;
import org.springframework.transaction.support.ResourceTransactionManager;
import org.springframework.util.ReflectionUtils;

/**
 * The listener Sumi puts in front of a JMS listener container's own (the {@code @JmsListener}
 * adapter, {@link #wrap}): it records the message being delivered (so a listener method with any
 * parameter style finds its key) and turns Sumi's refusals into what a JMS session understands.
 * The handler's own exceptions pass through unchanged: the container rolls the transacted session
 * back (or recovers a {@code CLIENT_ACKNOWLEDGE} session) and the broker redelivers, up to its
 * redelivery limit, then dead-letters.
 *
 * <p>Refusals ({@link Verdict}):
 * <ul>
 *   <li>{@code REJECT} (no key, an invalid key, a rejected fingerprint): with a
 *   {@linkplain SumiJmsSettings#deadLetterQueue() dead-letter queue}, a copy of the message goes
 *   there, sent in the listener's session (in a transacted session it commits with the
 *   consumption: both or neither), with properties {@code sumi_dead_letter_reason},
 *   {@code sumi_dead_letter_exception}, {@code sumi_original_destination} and
 *   {@code sumi_original_message_id}, and the message is consumed. Without one, the exception is
 *   thrown (the session rolls back) and the broker's redelivery limit dead-letters it (Artemis:
 *   {@code max-delivery-attempts}, {@code dead-letter-address}); Sumi logs why at {@code WARN}.</li>
 *   <li>{@code BUSY} (another consumer holds a live lease on the key) and {@code RECONCILE} (the row
 *   awaits an operator): the core's {@link io.sumi.consumer.binder.BusyPolicy}
 *   ({@link SumiJmsSettings#busyPolicy()}). The consumer thread keeps the message, waits
 *   {@code busyRetryInterval} and runs it again: a busy key until the holder is done (then it is a
 *   duplicate) or its lease ends (then it is claimed and run), and at least until the holder's lease
 *   it first met has ended by the database's clock, however short {@code busyMaxWait} is; past
 *   that and {@code busyMaxWait} (or when the container stops) the session rolls back, one broker
 *   delivery. A row awaiting reconciliation is held for {@code busyMaxWait}, then rolled back, so
 *   the broker's limit dead-letters it next to its ledger row. A busy key whose holder died
 *   therefore never reaches the dead-letter queue while the lease lives.</li>
 *   <li>{@code BUDGET}: the container is stopped by the {@link JmsBudgetListenerStopper} (on its
 *   own thread) and this consumer thread keeps the message until the stopper starts the container
 *   again, then runs it. Without a stopper (or on a container other than
 *   {@code DefaultMessageListenerContainer}): a wait of {@code busyRetryInterval}, then a
 *   rollback.</li>
 * </ul>
 * These apply to refusals of the delivery itself, by the guard of the {@code @JmsListener} method
 * before it ran. A refusal from a guarded method the listener calls comes after the listener's own
 * work, which only a rollback undoes: the session rolls back (after a wait of
 * {@code busyRetryInterval} unless it is a rejection).
 * Thread-safe; one instance per container.
 */
public final class SumiJmsMessageListener implements SessionAwareMessageListener<Message>, SubscriptionNameProvider {

    /** Properties a dead-lettered copy gets. */
    public static final String DEAD_LETTER_REASON = "sumi_dead_letter_reason";

    public static final String DEAD_LETTER_EXCEPTION = "sumi_dead_letter_exception";
    public static final String ORIGINAL_DESTINATION = "sumi_original_destination";
    public static final String ORIGINAL_MESSAGE_ID = "sumi_original_message_id";

    private static final Logger log = LoggerFactory.getLogger(SumiJmsMessageListener.class);

    private final Object delegate;
    private final AbstractMessageListenerContainer container;
    private final SumiJmsSettings settings;
    private final @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper;

    private SumiJmsMessageListener(
            Object delegate,
            AbstractMessageListenerContainer container,
            SumiJmsSettings settings,
            @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper) {
        if (!(delegate instanceof MessageListener) && !(delegate instanceof SessionAwareMessageListener<?>)) {
            throw new IllegalArgumentException("Not a JMS message listener: " + delegate);
        }
        this.delegate = delegate;
        this.container = container;
        this.settings = Objects.requireNonNull(settings, "settings");
        this.budgetStopper = budgetStopper;
    }

    /**
     * Puts Sumi's listener in front of {@code container}'s message listener (once: a container
     * already wrapped is left as it is), and warns (once per container, then) if the container's
     * acknowledge mode loses the messages of failed handlers.
     */
    public static void wrap(
            AbstractMessageListenerContainer container,
            SumiJmsSettings settings,
            @Nullable ListenerPauser<AbstractMessageListenerContainer> budgetStopper) {
        Object listener = container.getMessageListener();
        if (listener == null || listener instanceof SumiJmsMessageListener) {
            return;
        }
        container.setMessageListener(new SumiJmsMessageListener(listener, container, settings, budgetStopper));
        warnIfAcknowledgedBeforeHandling(container);
    }

    /**
     * A {@code DefaultMessageListenerContainer} without a transacted session in
     * {@code AUTO_ACKNOWLEDGE} or {@code DUPS_OK_ACKNOWLEDGE} mode acknowledges each message as it
     * receives it, before the listener runs: a failed handler's message is never redelivered.
     */
    private static void warnIfAcknowledgedBeforeHandling(AbstractMessageListenerContainer container) {
        if (container.isSessionTransacted()
                || container.getSessionAcknowledgeMode() == Session.CLIENT_ACKNOWLEDGE
                || !(container instanceof DefaultMessageListenerContainer)
                || transactsTheSession(container)) {
            return;
        }
        log.warn(
                "The JMS listener container of {} acknowledges each message before its listener runs (a"
                        + " DefaultMessageListenerContainer with a non-transacted session in acknowledge mode {}): when an"
                        + " @IdempotentHandler fails, Sumi releases its claim but the broker never redelivers the message, so"
                        + " it is lost. Use sessionTransacted=true (Spring Boot's default) or CLIENT_ACKNOWLEDGE (docs/jms.md)",
                destination(container),
                container.getSessionAcknowledgeMode());
    }

    /** {@code AbstractPollingMessageListenerContainer.getTransactionManager()} is protected. */
    private static final @Nullable Method GET_TRANSACTION_MANAGER =
            ReflectionUtils.findMethod(AbstractPollingMessageListenerContainer.class, "getTransactionManager");

    /**
     * Whether the container's transaction manager makes its JMS session transacted: a
     * {@code JmsTransactionManager} (its resource is a JMS {@code ConnectionFactory}) or JTA. Any
     * other one (a {@code DataSourceTransactionManager}, say) leaves the session as configured, so
     * {@code AUTO_ACKNOWLEDGE} still acknowledges before the listener runs.
     */
    private static boolean transactsTheSession(AbstractMessageListenerContainer container) {
        if (GET_TRANSACTION_MANAGER == null) {
            return false;
        }
        ReflectionUtils.makeAccessible(GET_TRANSACTION_MANAGER);
        Object manager = ReflectionUtils.invokeMethod(GET_TRANSACTION_MANAGER, container);
        return (manager instanceof ResourceTransactionManager resource
                        && resource.getResourceFactory() instanceof ConnectionFactory)
                || (manager != null && isJta(manager.getClass()));
    }

    private static boolean isJta(Class<?> type) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c.getName().equals("org.springframework.transaction.jta.JtaTransactionManager")) {
                return true;
            }
        }
        return false;
    }

    /** The destination a container listens to, for log messages. */
    static String destination(AbstractMessageListenerContainer container) {
        Object destination = container.getDestination();
        if (destination == null) {
            destination = container.getDestinationName();
        }
        return (container.isPubSubDomain() ? "topic " : "queue ") + destination;
    }

    /** The listener Sumi wraps. */
    public Object delegate() {
        return delegate;
    }

    @Override
    public String getSubscriptionName() {
        return delegate instanceof SubscriptionNameProvider provider
                ? provider.getSubscriptionName()
                : delegate.getClass().getName();
    }

    @Override
    public void onMessage(Message message, @Nullable Session session) throws JMSException {
        CurrentJmsDelivery.set(message);
        try {
            BusyHold hold = settings.busyPolicy().start();
            while (true) {
                try {
                    invokeDelegate(message, session);
                    return;
                } catch (RuntimeException | JMSException ex) {
                    RuntimeException refusal = Verdict.find(ex);
                    Verdict verdict = Verdict.of(refusal);
                    if (refusal == null || verdict == null) {
                        throw ex; // the handler's own failure: the container rolls back, the broker redelivers
                    }
                    if (!CurrentJmsDelivery.takeEntryRefusal(refusal)) {
                        // Refused by a guarded method the listener called, after the listener's own
                        // work (sends in the session, say): only a rollback undoes that.
                        if (verdict.redeliver()) {
                            sleep();
                        }
                        throw ex;
                    }
                    switch (verdict) {
                        case REJECT -> {
                            reject(message, session, refusal, ex);
                            return;
                        }
                        case BUSY, RECONCILE, LEDGER_UNAVAILABLE -> {
                            // The core's busy policy: held in place at least until the holder's lease
                            // ended (by the database's answers) and busyMaxWait passed; an unreachable
                            // ledger for as long as it lasts.
                            if (!hold.retry(refusal, container::isRunning)) {
                                throw ex;
                            }
                        }
                        case BUDGET -> {
                            if (!holdWhileStopped(refusal)) {
                                throw ex;
                            }
                        }
                    }
                }
            }
        } finally {
            CurrentJmsDelivery.clear();
        }
    }

    @SuppressWarnings("unchecked")
    private void invokeDelegate(Message message, @Nullable Session session) throws JMSException {
        if (delegate instanceof SessionAwareMessageListener<?> aware) {
            ((SessionAwareMessageListener<Message>) aware)
                    .onMessage(message, Objects.requireNonNull(session, "session"));
        } else {
            ((MessageListener) delegate).onMessage(message);
        }
    }

    /**
     * After a budget refusal: stops the container (on the stopper's thread) and keeps the message
     * until the stopper starts it again. Whether to run the message again now; {@code false}: roll
     * it back (after a wait, when there is no stopper to wait for).
     */
    private boolean holdWhileStopped(RuntimeException refusal) {
        ListenerPauser<AbstractMessageListenerContainer> stopper = budgetStopper;
        if (stopper == null || !(container instanceof DefaultMessageListenerContainer)) {
            // A SimpleMessageListenerContainer's session cannot stop while its listener runs: no hold.
            sleep();
            return false;
        }
        stopper.pauseFor(container, refusal);
        // The stopper is a Lifecycle (JmsBudgetListenerStopper): it resumes nothing once stopped.
        while (stopper.isPaused(container)
                && (!(stopper instanceof Lifecycle lifecycle) || lifecycle.isRunning())
                && container.isActive()) {
            if (!sleep()) {
                return false;
            }
        }
        return container.isRunning();
    }

    /**
     * Dead-letters a message Sumi refused for good: a copy to the dead-letter queue in the
     * listener's session, or (without one) the exception, for the broker's redelivery limit.
     */
    private void reject(Message message, @Nullable Session session, RuntimeException refusal, Exception failure)
            throws JMSException {
        String queue = settings.deadLetterQueue();
        String reason = refusal.getMessage() == null ? refusal.getClass().getSimpleName() : refusal.getMessage();
        if (queue == null || session == null) {
            log.warn(
                    "Sumi rejected a message of {} (delivery {}): {}. Rolled back: the broker's redelivery limit"
                            + " dead-letters it (set sumi.jms.dead-letter-queue to send it there at once)",
                    destination(container),
                    deliveryCount(message),
                    reason);
            throw rethrown(failure);
        }
        Message copy = copy(message, session);
        if (copy == null) {
            log.warn(
                    "Sumi rejected a message of {} ({}), a {} it cannot copy to {}: rolled back for the broker's"
                            + " redelivery limit",
                    destination(container),
                    reason,
                    message.getClass().getSimpleName(),
                    queue);
            throw rethrown(failure);
        }
        copy.setStringProperty(DEAD_LETTER_REASON, reason);
        copy.setStringProperty(DEAD_LETTER_EXCEPTION, refusal.getClass().getName());
        copy.setStringProperty(ORIGINAL_DESTINATION, String.valueOf(message.getJMSDestination()));
        if (message.getJMSMessageID() != null) {
            copy.setStringProperty(ORIGINAL_MESSAGE_ID, message.getJMSMessageID());
        }
        Destination deadLetters = container.getDestinationResolver().resolveDestinationName(session, queue, false);
        MessageProducer producer = session.createProducer(deadLetters);
        try {
            producer.send(copy, message.getJMSDeliveryMode(), message.getJMSPriority(), 0);
        } finally {
            producer.close();
        }
        log.warn("Sumi rejected a message of {} and sent it to {}: {}", destination(container), queue, reason);
    }

    /** A copy of {@code message} (body and properties), or {@code null} for a body Sumi cannot copy. */
    private static @Nullable Message copy(Message message, Session session) throws JMSException {
        Message copy;
        if (message instanceof TextMessage text) {
            copy = session.createTextMessage(text.getText());
        } else if (message instanceof BytesMessage bytes) {
            BytesMessage body = session.createBytesMessage();
            body.writeBytes((byte[]) Objects.requireNonNull(JmsInboundMessage.body(bytes)));
            copy = body;
        } else if (message instanceof MapMessage map) {
            MapMessage body = session.createMapMessage();
            Enumeration<?> names = map.getMapNames();
            while (names.hasMoreElements()) {
                String name = String.valueOf(names.nextElement());
                body.setObject(name, map.getObject(name));
            }
            copy = body;
        } else if (message instanceof ObjectMessage object) {
            copy = session.createObjectMessage(object.getObject());
        } else if (message instanceof StreamMessage) {
            return null;
        } else {
            copy = session.createMessage();
        }
        Enumeration<?> names = message.getPropertyNames();
        while (names.hasMoreElements()) {
            String name = String.valueOf(names.nextElement());
            if (name.startsWith("JMSX") || name.startsWith("JMS_")) {
                continue; // set by the provider
            }
            copy.setObjectProperty(name, message.getObjectProperty(name));
        }
        copy.setJMSCorrelationID(message.getJMSCorrelationID());
        copy.setJMSType(message.getJMSType());
        return copy;
    }

    /** {@code failure} to throw from {@code onMessage}: a JMS exception as it is, any other as the runtime exception it is. */
    private static JMSException rethrown(Exception failure) {
        if (failure instanceof JMSException jms) {
            return jms;
        }
        throw (RuntimeException) failure;
    }

    private static @Nullable Object deliveryCount(Message message) {
        try {
            return message.getObjectProperty("JMSXDeliveryCount");
        } catch (JMSException ex) {
            return null;
        }
    }

    /** Waits {@code busyRetryInterval}; {@code false} if interrupted (the container shuts down). */
    private boolean sleep() {
        try {
            Thread.sleep(settings.busyRetryInterval().toMillis());
            return true;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
