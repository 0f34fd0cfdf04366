package io.sumi.rabbit.internal;

import com.rabbitmq.client.Channel;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The channel a MANUAL-acknowledgement listener is given while Sumi guards its delivery: the
 * listener's {@code basicAck} / {@code basicNack} / {@code basicReject} of the delivery's own tags
 * are recorded and held back until Sumi's ledger work (completion, release, the handler's
 * transaction) is done, then passed on in the listener's order ({@link #release}). A nack or reject
 * tells Sumi the message is not done. Every other call, and a settlement of another delivery's tags
 * (an application that acknowledges earlier deliveries later), goes straight to the real channel;
 * after {@link #release} everything does (a listener may keep the channel and settle later).
 */
public final class SettlingChannel implements InvocationHandler {

    private final Channel target;
    private final Set<Long> deliveryTags;
    private final long lowestTag;
    private final List<Object[]> held = new ArrayList<>();
    private final List<Method> heldMethods = new ArrayList<>();
    private final Set<Long> settled = new HashSet<>();
    private final Set<Long> negative = new HashSet<>();
    private volatile boolean holding = true;

    private SettlingChannel(Channel target, Set<Long> deliveryTags) {
        this.target = target;
        this.deliveryTags = deliveryTags;
        this.lowestTag = deliveryTags.stream().mapToLong(Long::longValue).min().orElse(Long.MAX_VALUE);
    }

    /** A settling channel over {@code target} for the delivery with {@code deliveryTags}. */
    public static SettlingChannel of(Channel target, Set<Long> deliveryTags) {
        return new SettlingChannel(target, Set.copyOf(deliveryTags));
    }

    /** The proxy to give the listener. */
    public Channel channel() {
        return (Channel)
                Proxy.newProxyInstance(SettlingChannel.class.getClassLoader(), new Class<?>[] {Channel.class}, this);
    }

    /** The real channel. */
    public Channel target() {
        return target;
    }

    @Override
    public @Nullable Object invoke(Object proxy, Method method, @Nullable Object @Nullable [] args) throws Throwable {
        if (args != null && holding && settles(method) && covers(args, method)) {
            synchronized (this) {
                long tag = (Long) args[0];
                boolean multiple = multiple(method, args);
                for (long t : deliveryTags) {
                    if (t == tag || (multiple && t <= tag)) {
                        settled.add(t);
                        if (!method.getName().equals("basicAck")) {
                            negative.add(t);
                        }
                    }
                }
                held.add(args.clone());
                heldMethods.add(method);
            }
            return null;
        }
        if (method.getDeclaringClass() == Object.class) {
            switch (method.getName()) {
                case "equals" -> {
                    return args != null && proxy == args[0];
                }
                case "hashCode" -> {
                    return System.identityHashCode(proxy);
                }
                case "toString" -> {
                    return "Sumi settling channel over " + target;
                }
                default -> {
                    // every other Object method goes to the target
                }
            }
        }
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException ex) {
            throw ex.getCause() != null ? ex.getCause() : ex;
        }
    }

    private static boolean settles(Method method) {
        String name = method.getName();
        return (name.equals("basicAck") || name.equals("basicNack") || name.equals("basicReject"))
                && method.getParameterCount() >= 2
                && method.getParameterTypes()[0] == long.class;
    }

    private boolean covers(@Nullable Object[] args, Method method) {
        long tag = (Long) args[0];
        return deliveryTags.contains(tag) || (multiple(method, args) && tag >= lowestTag);
    }

    /** basicReject's second argument is requeue: it settles its one tag. */
    private static boolean multiple(Method method, @Nullable Object[] args) {
        return !method.getName().equals("basicReject") && Boolean.TRUE.equals(args[1]);
    }

    /** Whether the listener nacked or rejected {@code deliveryTag} (so far). */
    public synchronized boolean negative(long deliveryTag) {
        return negative.contains(deliveryTag);
    }

    /** Whether the listener settled {@code deliveryTag} (ack, nack or reject; so far). */
    public synchronized boolean settled(long deliveryTag) {
        return settled.contains(deliveryTag);
    }

    /**
     * Drops the held settlements, passing none on; from now on nothing is held. For a binder whose
     * error handling settles a failed delivery itself (Spring Cloud Stream's republish to the DLQ
     * acknowledges it): a held ack passed on as well would settle the tag twice, which closes the
     * channel.
     */
    public synchronized void discard() {
        holding = false;
        held.clear();
        heldMethods.clear();
    }

    /** Passes the held settlements on to the real channel, in order; from now on nothing is held. */
    public void release() throws Exception {
        List<Object[]> calls;
        List<Method> methods;
        synchronized (this) {
            holding = false;
            calls = new ArrayList<>(held);
            methods = new ArrayList<>(heldMethods);
            held.clear();
            heldMethods.clear();
        }
        for (int i = 0; i < calls.size(); i++) {
            try {
                methods.get(i).invoke(target, calls.get(i));
            } catch (InvocationTargetException ex) {
                if (ex.getCause() instanceof Exception cause) {
                    throw cause;
                }
                throw ex;
            }
        }
    }
}
