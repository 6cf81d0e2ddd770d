# Sourced by the device scripts (device_check.sh, device_confirm.sh) on a bare GPU machine: the staged Hydra wheels
# installed into $STAGE/site where Hydra is missing, this tree's src/ first on the path (subprocesses too), the
# staged data as $GATELAB_DATA unless set. Needs $STAGE and $LOG.
if [ -d "$STAGE/wheels" ] && ! python -c "import hydra" 2>/dev/null; then
  pip install -q --no-deps --target "$STAGE/site" "$STAGE"/wheels/*.whl >> "$LOG" 2>&1
  export PYTHONPATH="$PWD/$STAGE/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"  # the project from this tree (subprocess tests too)
export GATELAB_DATA=${GATELAB_DATA:-$PWD/$STAGE/data}
