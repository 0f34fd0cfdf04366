package com.example.sumifixtures.violating;

import io.sumi.test.internal.DeliveryLog;

/** Depends on an internal package of Sumi. */
public class UsesSumiInternals {

    public int consumers(DeliveryLog log) {
        return log.consumers().size();
    }
}
